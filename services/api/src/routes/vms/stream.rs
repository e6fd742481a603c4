//! Live events of one VM as Server-Sent Events, resumable with `Last-Event-ID`.
//!
//! Subscribe first (to the VM's NATS subject, where the relay publishes), then send the
//! backlog from Postgres, then the live events, dropping what was sent already. A gap in
//! the live sequence (a missed message) is filled from Postgres, so nothing is lost and
//! nothing is sent twice.

use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use domain::provisioning::VmId;
use futures::{Stream, StreamExt};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use super::parse_id;
use crate::routes::events::EventOut;
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
#[tracing::instrument(skip_all, fields(vm_id = %id))]
pub async fn stream_vm(
    State(state): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Sse<impl Stream<Item = Result<Event, axum::Error>>>, ApiError> {
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
    tokio::spawn(async move {
        if let Err(Stopped::Store(error)) = forward(state, vm, after, live, tx).await {
            tracing::warn!(%error, vm_id = %vm, "could not read the backlog; the stream ends");
        }
    });
    // A serialization error (there is none for plain data) would end the stream.
    let events = ReceiverStream::new(rx).map(|e: EventOut| {
        Event::default()
            .id(e.sequence.to_string())
            .event(e.event_type.clone())
            .json_data(&e)
    });
    Ok(Sse::new(events).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))))
}

/// How long a quiet stream waits before it checks the store for events it missed.
const IDLE_CATCH_UP: Duration = Duration::from_secs(10);

/// Why a stream stopped early.
enum Stopped {
    /// The client went away.
    ClientGone,
    Store(store::sqlx::Error),
}

/// Sends the backlog after `sent`, then the live events; returns `Ok` when the subscription
/// ends.
async fn forward(
    state: AppState,
    vm: VmId,
    mut sent: u64,
    mut live: bus::async_nats::Subscriber,
    tx: mpsc::Sender<EventOut>,
) -> Result<(), Stopped> {
    catch_up(&state, vm, &mut sent, &tx).await?;
    loop {
        let message = tokio::select! {
            // The client went away: drop the subscription now, not at the next event.
            _ = tx.closed() => return Err(Stopped::ClientGone),
            message = tokio::time::timeout(IDLE_CATCH_UP, live.next()) => message,
        };
        let message = match message {
            Ok(Some(message)) => message,
            Ok(None) => return Ok(()),
            Err(_) => {
                // Quiet for a while: read the store, in case the last live messages were
                // dropped (core NATS delivers at most once to a slow subscriber).
                catch_up(&state, vm, &mut sent, &tx).await?;
                continue;
            }
        };
        let envelope = match serde_json::from_slice::<bus::EventEnvelope>(&message.payload) {
            Ok(envelope) => envelope,
            Err(error) => {
                // Skipped; the gap it leaves is filled from the store.
                tracing::warn!(%error, vm_id = %vm, "an event message that is not an envelope");
                continue;
            }
        };
        if envelope.sequence <= sent {
            continue; // already sent from the backlog
        }
        if envelope.sequence > sent + 1 {
            // a gap: read what is missing from the store
            catch_up(&state, vm, &mut sent, &tx).await?;
            if envelope.sequence <= sent {
                continue;
            }
        }
        sent = envelope.sequence;
        send(&tx, envelope.into()).await?;
    }
}

/// Sends every stored event after `sent`.
async fn catch_up(
    state: &AppState,
    vm: VmId,
    sent: &mut u64,
    tx: &mpsc::Sender<EventOut>,
) -> Result<(), Stopped> {
    loop {
        let events = store::vm_events(&state.pool, vm, *sent, 1000)
            .await
            .map_err(Stopped::Store)?;
        let n = events.len();
        for event in events {
            *sent = event.sequence;
            send(tx, event.into()).await?;
        }
        if n < 1000 {
            return Ok(());
        }
    }
}

async fn send(tx: &mpsc::Sender<EventOut>, event: EventOut) -> Result<(), Stopped> {
    tx.send(event).await.map_err(|_| Stopped::ClientGone)
}
