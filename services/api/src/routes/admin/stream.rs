//! `GET /api/v1/admin/stream`: every event of the platform as it commits, for admins,
//! filtered like the audit history. Follows the commit order through the stream hub; the
//! SSE id is the event's position.

use std::collections::HashMap;

use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use store::audit::AuditFilter;
use store::feed::FeedEvent;
use time::OffsetDateTime;
use utoipa::ToSchema;
use uuid::Uuid;

use super::audit::audit_query;
use crate::streams::{self, Caller, Follower, Outbox, Stopped};
use crate::{ApiError, AppState};

/// One event of the platform, with its place in the commit order.
#[derive(Debug, Serialize, ToSchema)]
pub struct PlatformEventOut {
    /// The event's place in the whole log; the stream's id.
    pub position: i64,
    /// `Provisioning` (a VM's event) or `Catalog`.
    pub aggregate_type: String,
    /// The VM's id, or `catalog`.
    pub aggregate_id: String,
    pub sequence: u64,
    #[serde(rename = "type")]
    pub event_type: String,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub recorded_at: OffsetDateTime,
    pub actor: Option<String>,
    #[schema(value_type = Object)]
    pub data: serde_json::Value,
}

/// Every event as it commits: `event` is the type, `data` a [`PlatformEventOut`], `id` the
/// position. Filters: `actor`, `type` (repeatable), `vm`, `provider` (VM events of VMs on
/// it), `from`/`to` (RFC 3339: recorded at or after `from`, before `to`), as the audit history takes them, `exclude_logs=true`. Resume with
/// `Last-Event-ID` or `?since=`. An admin who loses their rights (demoted, disabled, their
/// credential revoked) gets a last `end` event within seconds, and the stream ends.
#[utoipa::path(get, path = "/api/v1/admin/stream", tag = "admin",
    security(("bearer" = [])),
    params(
        ("actor" = Option<String>, Query, min_length = 1, pattern = r"^[^\u0000]*$", description = "Only events of this actor"),
        ("type" = Option<Vec<crate::routes::schemas::EventType>>, Query, explode, style = Form, description = "Only events of these types (repeat it)"),
        ("vm" = Option<uuid::Uuid>, Query, description = "Only this VM's events"),
        ("provider" = Option<String>, Query, min_length = 1, max_length = 64, pattern = r"^[a-z0-9._-]+$", description = "Only events of VMs on this provider"),
        ("from" = Option<crate::routes::schemas::Time>, Query, description = "Only events recorded at or after (RFC 3339)"),
        ("to" = Option<crate::routes::schemas::Time>, Query, description = "Only events recorded before (RFC 3339), not before `from`"),
        ("exclude_logs" = Option<bool>, Query, description = "Leave out `LogLine` events"),
        ("since" = Option<String>, Query, pattern = r"^([0-9]{1,18})?$", description = "Resume after this position (empty: as if absent)"),
        ("Last-Event-ID" = Option<i64>, Header, minimum = 0, description = "Resume after this position"),
    ),
    responses(
        (status = 200, description = "text/event-stream of PlatformEventOut", content_type = "text/event-stream"),
        (status = 422, description = "A parameter is invalid (`detail` names it)", body = crate::error::ErrorBody),
    ))]
#[tracing::instrument(skip_all)]
pub async fn stream_platform(
    State(state): State<AppState>,
    caller: Caller,
    Query(params): Query<Vec<(String, String)>>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let (filter, since) = stream_filter(&params)?;
    let resume = streams::resume_point(&headers, since.as_deref(), i64::MAX as u64)?;
    let slot = state.slots.take(caller.principal.user)?;
    let from = streams::resume_cursor(&state, resume.as_deref()).await?;
    let follower = Follower::new(&state.hub, from).await?;
    let (outbox, events) = streams::open(&state, caller, resume, slot);
    tokio::spawn(async move {
        if let Err(Stopped::Store(error)) = forward(state, filter, follower, outbox).await {
            tracing::warn!(%error, "could not read the events; the stream ends");
        }
    });
    Ok(Sse::new(events)
        .keep_alive(KeepAlive::new().interval(streams::KEEP_ALIVE))
        .into_response())
}

/// The audit history's filters, and where the stream resumes: `since`, which the audit
/// history does not take (nor its paging, `after` and `limit`).
fn stream_filter(params: &[(String, String)]) -> Result<(AuditFilter, Option<String>), ApiError> {
    let mut since = None;
    let mut filters = vec![];
    for (name, value) in params {
        match name.as_str() {
            "since" => since = Some(value.clone()),
            "after" | "limit" => {
                return Err(ApiError::Invalid {
                    field: name.clone(),
                    reason: "is not a parameter of this stream (resume it with since)".into(),
                })
            }
            _ => filters.push((name.clone(), value.clone())),
        }
    }
    Ok((audit_query(&filters, true)?.filter, since))
}

async fn forward(
    state: AppState,
    filter: AuditFilter,
    mut follower: Follower,
    mut outbox: Outbox,
) -> Result<(), Stopped> {
    // The provider of each VM seen, for the `provider` filter.
    let mut providers: HashMap<String, String> = HashMap::new();
    loop {
        let events = tokio::select! {
            _ = outbox.closed() => return Err(Stopped::ClientGone),
            events = follower.next() => events,
        };
        let Some(events) = events else { return Ok(()) };
        let events: Vec<FeedEvent> = events?.into_iter().filter(|e| filter.matches(e)).collect();
        if let Some(provider) = &filter.provider {
            learn_providers(&state, &events, &mut providers).await?;
            for event in events.into_iter().filter(|e| {
                providers.get(&e.aggregate_id).map(String::as_str) == Some(provider.as_str())
            }) {
                send(&mut outbox, event).await?;
            }
        } else {
            for event in events {
                send(&mut outbox, event).await?;
            }
        }
    }
}

async fn learn_providers(
    state: &AppState,
    events: &[FeedEvent],
    providers: &mut HashMap<String, String>,
) -> Result<(), Stopped> {
    // A VM requested in these events may not be in the read model yet: its request names it.
    for event in events.iter().filter(|e| e.event_type == "Requested") {
        if let Some(provider) = event
            .payload
            .pointer("/data/spec/provider")
            .and_then(|p| p.as_str())
        {
            providers.insert(event.aggregate_id.clone(), provider.to_owned());
        }
    }
    let unknown: Vec<Uuid> = events
        .iter()
        .filter(|e| !providers.contains_key(&e.aggregate_id))
        .filter_map(|e| e.aggregate_id.parse().ok())
        .collect();
    if unknown.is_empty() {
        return Ok(());
    }
    for row in store::views::get_many(&state.app.pool, &unknown).await? {
        providers.insert(row.id.to_string(), row.provider);
    }
    Ok(())
}

async fn send(outbox: &mut Outbox, event: FeedEvent) -> Result<(), Stopped> {
    let out = PlatformEventOut {
        position: event.cursor.position,
        actor: event.actor(),
        data: event
            .payload
            .get("data")
            .cloned()
            .unwrap_or(serde_json::Value::Null),
        aggregate_type: event.aggregate_type,
        aggregate_id: event.aggregate_id,
        sequence: event.sequence,
        event_type: event.event_type,
        recorded_at: event.recorded_at,
    };
    let data = Event::default()
        .event(out.event_type.clone())
        .json_data(&out)
        .map_err(|_| Stopped::ClientGone)?;
    outbox.send(out.position.to_string(), data).await
}
