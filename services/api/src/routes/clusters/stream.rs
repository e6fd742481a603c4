//! `GET /api/v1/clusters/{id}/stream`: the cluster's events as Server-Sent Events, from its
//! first (or after `Last-Event-ID` / `?since=`, a sequence) and then live, each once.
//!
//! The live follower is opened first, then the backlog read from the event store; a live
//! event the backlog already held (its sequence not above the last sent) is dropped, so
//! nothing falls between the two and nothing comes twice.

use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use domain::cluster::ClusterId;
use domain::AggregateKind;

use super::parse_id;
use crate::routes::events::EventOut;
use crate::routes::vms::Since;
use crate::streams::{self, Caller, Follower, Outbox, Stopped};
use crate::{ApiError, AppState};

/// The largest sequence a cluster stream resumes after.
const MAX_SEQUENCE: u64 = 999_999_999_999_999_999;
/// Events read from the store at a time for the backlog.
const PAGE: i64 = 500;

/// The cluster's events: `id` is the sequence, `event` the type (`NodeRequested`,
/// `GatePassed`, `ClusterReady`, ...), `data` an [`EventOut`]. Reconnect with
/// `Last-Event-ID` (or `?since=`) to resume. Another user's cluster is `404`. As the VM
/// streams: a client that leaves 64 events unread for 5 s gets a last `reconnect` event; a
/// caller who loses their rights gets a last `end` event; at most 16 streams per caller.
#[utoipa::path(get, path = "/api/v1/clusters/{id}/stream", tag = "clusters",
    security(("bearer" = [])),
    params(
        ("id" = String, Path, description = "Cluster id"),
        ("Last-Event-ID" = Option<i64>, Header, minimum = 0, description = "Resume after this sequence"),
        Since,
    ),
    responses(
        (status = 200, description = "text/event-stream of EventOut", content_type = "text/event-stream"),
        (status = 404, body = crate::error::ErrorBody),
        (status = 422, description = "`Last-Event-ID` is not a sequence", body = crate::error::ErrorBody),
    ))]
#[tracing::instrument(skip_all)]
pub async fn stream_cluster(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    Query(since): Query<Since>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let id = parse_id(&id)?;
    let app_caller = app::Caller {
        principal: caller.principal.0.clone(),
        request_id: String::new(),
        client_addr: app::ClientAddr(Err(String::new())),
    };
    state.app.cluster(&app_caller, id).await?;
    let resume = streams::resume_point(&headers, since.since.as_deref(), MAX_SEQUENCE)?;
    let after = match resume.as_deref() {
        Some(s) => s.parse::<u64>().map_err(|_| ApiError::Invalid {
            field: "since".into(),
            reason: "must be a sequence".into(),
        })?,
        None => 0,
    };
    let slot = state.slots.take(caller.principal.user)?;
    let follower = Follower::new(&state.hub, None).await?;
    let (outbox, events) = streams::open(&state, caller, resume, slot);
    tokio::spawn(async move {
        if let Err(Stopped::Store(error)) = forward(state, id, after, follower, outbox).await {
            tracing::warn!(%error, "could not read the cluster's events; the stream ends");
        }
    });
    Ok(Sse::new(events)
        .keep_alive(KeepAlive::new().interval(streams::KEEP_ALIVE))
        .into_response())
}

async fn forward(
    state: AppState,
    id: ClusterId,
    mut after: u64,
    mut follower: Follower,
    mut outbox: Outbox,
) -> Result<(), Stopped> {
    let aggregate = id.to_string();
    let kind = AggregateKind::Cluster.type_name();
    loop {
        let page = store::audit_events(&state.app.pool, kind, &aggregate, after, PAGE).await?;
        let full = page.len() as i64 == PAGE;
        for event in page {
            after = event.sequence;
            send(&mut outbox, EventOut::from(event)).await?;
        }
        if !full {
            break;
        }
    }
    loop {
        let batch = tokio::select! {
            _ = outbox.closed() => return Err(Stopped::ClientGone),
            batch = follower.next() => batch,
        };
        let Some(batch) = batch else { return Ok(()) };
        for event in batch? {
            if event.kind() != Some(AggregateKind::Cluster)
                || event.aggregate_id != aggregate
                || event.sequence <= after
            {
                continue;
            }
            after = event.sequence;
            let out = EventOut {
                sequence: event.sequence,
                event_type: event.event_type.clone(),
                recorded_at: event.recorded_at,
                actor: event.actor(),
                data: event.payload.get("data").cloned().unwrap_or_default(),
            };
            send(&mut outbox, out).await?;
        }
    }
}

async fn send(outbox: &mut Outbox, event: EventOut) -> Result<(), Stopped> {
    let id = event.sequence.to_string();
    let data = Event::default()
        .event(event.event_type.clone())
        .json_data(&event)
        .map_err(|_| Stopped::ClientGone)?;
    outbox.send(id, data).await
}
