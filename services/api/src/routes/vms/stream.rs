//! Live events of one VM as Server-Sent Events, resumable with `Last-Event-ID`.
//!
//! Subscribe first (to the VM's NATS subject, where the relay publishes), then send the
//! backlog from Postgres, then the live events, dropping what was sent already. A gap in
//! the live sequence (a missed message) is filled from Postgres, so nothing is lost and
//! nothing is sent twice.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use domain::provisioning::VmId;
use futures::{Stream, StreamExt};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use super::{parse_id, EventOut};
use crate::{ApiError, AppState};

/// The VM's events as they are committed: `id` is the sequence, `event` the type, `data`
/// an [`EventOut`]. Reconnect with `Last-Event-ID` to resume. The stream may be opened
/// before the VM is created (with a client-chosen id).
#[utoipa::path(get, path = "/api/v1/vms/{id}/stream", tag = "vms",
    security(("bearer" = [])),
    params(
        ("id" = String, Path, description = "VM id"),
        ("Last-Event-ID" = Option<u64>, Header, description = "Resume after this sequence"),
    ),
    responses((status = 200, description = "text/event-stream of EventOut", content_type = "text/event-stream")))]
pub async fn stream_vm(
    State(state): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    let vm = parse_id(&id)?;
    let after = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(0);
    let live = state
        .bus
        .client
        .subscribe(state.bus.subjects.events_of(vm))
        .await
        .map_err(ApiError::internal)?;
    let (tx, rx) = mpsc::channel(256);
    tokio::spawn(forward(state, vm, after, live, tx));
    let events = ReceiverStream::new(rx).map(|e: EventOut| {
        Ok(Event::default()
            .id(e.sequence.to_string())
            .event(e.event_type.clone())
            .json_data(&e)
            .unwrap_or_default())
    });
    Ok(Sse::new(events).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))))
}

/// How long a quiet stream waits before it checks the store for events it missed.
const IDLE_CATCH_UP: Duration = Duration::from_secs(10);

async fn forward(
    state: AppState,
    vm: VmId,
    mut sent: u64,
    mut live: bus::async_nats::Subscriber,
    tx: mpsc::Sender<EventOut>,
) {
    if catch_up(&state, vm, &mut sent, &tx).await.is_err() {
        return;
    }
    loop {
        let message = tokio::select! {
            // The client went away: drop the subscription now, not at the next event.
            _ = tx.closed() => return,
            message = tokio::time::timeout(IDLE_CATCH_UP, live.next()) => message,
        };
        let message = match message {
            Ok(Some(message)) => message,
            Ok(None) => return,
            Err(_) => {
                // Quiet for a while: read the store, in case the last live messages were
                // dropped (core NATS delivers at most once to a slow subscriber).
                if catch_up(&state, vm, &mut sent, &tx).await.is_err() {
                    return;
                }
                continue;
            }
        };
        let Ok(envelope) = serde_json::from_slice::<bus::EventEnvelope>(&message.payload) else {
            continue;
        };
        if envelope.sequence <= sent {
            continue; // already sent from the backlog
        }
        if envelope.sequence > sent + 1 {
            // a gap: read what is missing from the store
            if catch_up(&state, vm, &mut sent, &tx).await.is_err() {
                return;
            }
            if envelope.sequence <= sent {
                continue;
            }
        }
        let Ok(recorded_at) = time::OffsetDateTime::parse(
            &envelope.recorded_at,
            &time::format_description::well_known::Rfc3339,
        ) else {
            continue;
        };
        let event = EventOut {
            sequence: envelope.sequence,
            event_type: envelope.event_type,
            recorded_at,
            actor: envelope.actor,
            data: envelope.data,
        };
        sent = event.sequence;
        if tx.send(event).await.is_err() {
            return; // the client went away
        }
    }
}

/// Sends every stored event after `sent`.
async fn catch_up(
    state: &AppState,
    vm: VmId,
    sent: &mut u64,
    tx: &mpsc::Sender<EventOut>,
) -> Result<(), ()> {
    loop {
        let events = store::vm_events(&state.pool, vm, *sent, 1000)
            .await
            .map_err(|e| tracing::warn!(error = %e, "could not read the backlog"))?;
        let n = events.len();
        for event in events {
            *sent = event.sequence;
            tx.send(event.into()).await.map_err(|_| ())?;
        }
        if n < 1000 {
            return Ok(());
        }
    }
}
