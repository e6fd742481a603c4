//! `GET /api/v1/vms/stream`: the list view, live. After each change of a VM (any event but
//! a Terraform line), the VM's row as `GET /vms/{id}` shows it. Follows the commit order
//! through the stream hub; the SSE id is the event's position, to resume from with
//! `Last-Event-ID` or `?since=`.

use std::collections::HashMap;
use std::time::Duration;

use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use domain::identity::UserId;
use domain::AggregateKind;
use store::feed::{Cursor, FeedEvent};
use uuid::Uuid;

use super::{Since, VmOut};
use crate::auth::Principal;
use crate::streams::{self, Caller, Follower, Outbox, Stopped};
use crate::{ApiError, AppState};

/// Every VM's row after each change, of the VMs the caller may see (their own; all for
/// admins): `event` is `vm`, `data` a [`VmOut`], `id` the position
/// of the change. Open it before reading `GET /vms`, so no change falls between the two;
/// a row may come again with nothing new (the read model moved on already). A client that
/// leaves 64 rows unread for 5 s gets a last `reconnect` event and the stream ends; one who
/// loses their rights gets a last `end` event. A caller holds at most 16 streams and exports
/// at once.
#[utoipa::path(get, path = "/api/v1/vms/stream", tag = "vms",
    security(("bearer" = [])),
    params(
        ("Last-Event-ID" = Option<i64>, Header, minimum = 0, description = "Resume after this position"),
        Since,
    ),
    responses(
        (status = 200, description = "text/event-stream of VmOut", content_type = "text/event-stream"),
        (status = 422, description = "`since` names no event, or `Last-Event-ID` is not a position (`detail` names it)", body = crate::error::ErrorBody),
    ))]
#[tracing::instrument(skip_all)]
pub async fn stream_vms(
    State(state): State<AppState>,
    caller: Caller,
    Query(since): Query<Since>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let resume = streams::resume_point(&headers, since.since.as_deref(), i64::MAX as u64)?;
    let slot = state.slots.take(caller.principal.user)?;
    let from = streams::resume_cursor(&state, resume.as_deref()).await?;
    let follower = Follower::new(&state.hub, from).await?;
    let principal = caller.principal.clone();
    let (outbox, rows) = streams::open(&state, caller, resume, slot);
    tokio::spawn(async move {
        if let Err(Stopped::Store(error)) = forward(state, principal, follower, outbox).await {
            tracing::warn!(%error, "could not read the VMs; the stream ends");
        }
    });
    Ok(Sse::new(rows)
        .keep_alive(KeepAlive::new().interval(streams::KEEP_ALIVE))
        .into_response())
}

async fn forward(
    state: AppState,
    principal: Principal,
    mut follower: Follower,
    mut outbox: Outbox,
) -> Result<(), Stopped> {
    loop {
        let events = tokio::select! {
            _ = outbox.closed() => return Err(Stopped::ClientGone),
            events = follower.next() => events,
        };
        let Some(events) = events else { return Ok(()) };
        let changed = changes(&events?);
        if changed.is_empty() {
            continue;
        }
        for (position, row) in rows(&state, &changed).await? {
            if !principal.may_see(&UserId::new(row.owner)) {
                continue;
            }
            let data = Event::default()
                .event("vm")
                .json_data(&row)
                .map_err(|_| Stopped::ClientGone)?;
            outbox.send(position.to_string(), data).await?;
        }
    }
}

/// A changed VM: its last sequence and the position of that event.
struct Change {
    sequence: u64,
    cursor: Cursor,
}

/// The VMs the events change, with their last event among them; log lines change no row.
fn changes(events: &[FeedEvent]) -> HashMap<Uuid, Change> {
    let mut changed = HashMap::new();
    for event in events {
        match event.kind() {
            Some(AggregateKind::Vm) => {}
            // The catalog's and clusters' changes show in no VM's row.
            Some(AggregateKind::Catalog | AggregateKind::Cluster) | None => continue,
        }
        if event.event_type == "LogLine" {
            continue;
        }
        let Ok(vm) = event.aggregate_id.parse::<Uuid>() else {
            continue;
        };
        changed.insert(
            vm,
            Change {
                sequence: event.sequence,
                cursor: event.cursor,
            },
        );
    }
    changed
}

/// How long a changed VM's row may lag behind its event (the projector folds it moments
/// after the commit) before the row is sent as it is.
const PROJECTION_WAIT: Duration = Duration::from_secs(3);

/// The rows of the changed VMs, once the read model shows each change, in commit order.
async fn rows(
    state: &AppState,
    changed: &HashMap<Uuid, Change>,
) -> Result<Vec<(i64, VmOut)>, Stopped> {
    let ids: Vec<Uuid> = changed.keys().copied().collect();
    let started = tokio::time::Instant::now();
    let rows = loop {
        let rows = store::views::get_many(&state.app.pool, &ids).await?;
        let behind = rows
            .iter()
            .any(|row| (row.last_sequence as u64) < changed[&row.id].sequence);
        if !behind && rows.len() == ids.len() || started.elapsed() > PROJECTION_WAIT {
            break rows;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let mut rows: Vec<(Cursor, VmOut)> = rows
        .into_iter()
        .map(|row| (changed[&row.id].cursor, VmOut::from(row)))
        .collect();
    // Ids in commit order, so that resuming from any of them skips exactly what came before.
    rows.sort_by_key(|(cursor, _)| *cursor);
    Ok(rows
        .into_iter()
        .map(|(cursor, row)| (cursor.position, row))
        .collect())
}
