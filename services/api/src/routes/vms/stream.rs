//! Live events of one VM as Server-Sent Events, resumable with `Last-Event-ID` or
//! `?since=<sequence>`.
//!
//! Subscribe first (to the VM's NATS subject, where the relay publishes), then send the
//! backlog from Postgres, then the live events, dropping what was sent already. A gap in
//! the live sequence (a missed message: the subscription holds only a few, see
//! `Bus::connect_for_streams`) is filled from Postgres, so nothing is lost and nothing is
//! sent twice. A client that stops reading is cut off (see `streams::outbox`).

use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use domain::provisioning::VmId;
use futures::StreamExt;
use serde::Deserialize;
use utoipa::IntoParams;

use super::parse_id;
use crate::routes::events::EventOut;
use crate::streams::{self, Caller, Outbox, Stopped};
use crate::{ApiError, AppState};

/// The largest sequence a VM stream resumes after: what `since` (18 digits) can say.
const MAX_SEQUENCE: u64 = 999_999_999_999_999_999;

/// Where a stream resumes.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct Since {
    /// Resume after this id (as `Last-Event-ID` does; this wins when both are given, unless
    /// empty, but a malformed `Last-Event-ID` is refused all the same).
    #[param(pattern = r"^([0-9]{1,18})?$")]
    pub since: Option<String>,
}

/// The VM's events as they are committed: `id` is the sequence, `event` the type, `data`
/// an [`EventOut`]. Reconnect with `Last-Event-ID` (or `?since=`) to resume. An admin may
/// open it before the VM is created (with a client-chosen id); for a user, a VM not theirs
/// (yet) is `404`. A client that leaves 64
/// events unread for 5 s gets a last `reconnect` event (its `id` the last one it got) and
/// the stream ends. A caller who loses their rights (a credential revoked, the user
/// disabled or their role changed) gets a last `end` event within seconds, and the stream
/// ends. A caller holds at most 16 streams and exports at once.
#[utoipa::path(get, path = "/api/v1/vms/{id}/stream", tag = "vms",
    security(("bearer" = [])),
    params(
        ("id" = String, Path, description = "VM id"),
        ("Last-Event-ID" = Option<u64>, Header, maximum = 999999999999999999_u64, description = "Resume after this sequence"),
        Since,
    ),
    responses(
        (status = 200, description = "text/event-stream of EventOut", content_type = "text/event-stream"),
        (status = 422, description = "`since` or `Last-Event-ID` is not a sequence (`detail` names it)", body = crate::error::ErrorBody),
    ))]
#[tracing::instrument(skip_all, fields(vm_id = %id))]
pub async fn stream_vm(
    State(state): State<AppState>,
    Path(id): Path<String>,
    caller: Caller,
    Query(since): Query<Since>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let vm = parse_id(&id)?;
    let resume = streams::resume_point(&headers, since.since.as_deref(), MAX_SEQUENCE)?;
    let slot = state.slots.take(caller.principal.user)?;
    let after = match &resume {
        Some(id) => id.parse::<u64>().map_err(|_| ApiError::Invalid {
            field: "since".into(),
            reason: format!("{id:?} is not an event id of this stream (a sequence)"),
        })?,
        None => 0,
    };
    let live = state
        .stream_nats
        .subscribe(state.app.bus.subjects.events_of(vm))
        .await
        .map_err(ApiError::internal)?;
    let (outbox, events) = streams::open(&state, caller, resume, slot);
    tokio::spawn(async move {
        if let Err(Stopped::Store(error)) = forward(state, vm, after, live, outbox).await {
            tracing::warn!(%error, vm_id = %vm, "could not read the backlog; the stream ends");
        }
    });
    Ok(Sse::new(events)
        .keep_alive(KeepAlive::new().interval(streams::KEEP_ALIVE))
        .into_response())
}

/// How long a quiet stream waits before it checks the store for events it missed.
const IDLE_CATCH_UP: Duration = Duration::from_secs(10);

/// Sends the backlog after `sent`, then the live events; returns `Ok` when the subscription
/// ends.
async fn forward(
    state: AppState,
    vm: VmId,
    mut sent: u64,
    mut live: bus::async_nats::Subscriber,
    mut outbox: Outbox,
) -> Result<(), Stopped> {
    catch_up(&state, vm, &mut sent, &mut outbox).await?;
    loop {
        let message = tokio::select! {
            // The client went away: drop the subscription now, not at the next event.
            _ = outbox.closed() => return Err(Stopped::ClientGone),
            message = tokio::time::timeout(IDLE_CATCH_UP, live.next()) => message,
        };
        let message = match message {
            Ok(Some(message)) => message,
            Ok(None) => return Ok(()),
            Err(_) => {
                // Quiet for a while: read the store, in case the last live messages were
                // dropped (core NATS delivers at most once to a slow subscriber).
                catch_up(&state, vm, &mut sent, &mut outbox).await?;
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
            catch_up(&state, vm, &mut sent, &mut outbox).await?;
            if envelope.sequence <= sent {
                continue;
            }
        }
        sent = envelope.sequence;
        send(&mut outbox, envelope.into()).await?;
    }
}

/// Sends every stored event after `sent`.
async fn catch_up(
    state: &AppState,
    vm: VmId,
    sent: &mut u64,
    outbox: &mut Outbox,
) -> Result<(), Stopped> {
    loop {
        let events = store::vm_events(&state.app.pool, vm, *sent, 1000).await?;
        let n = events.len();
        for event in events {
            *sent = event.sequence;
            send(outbox, event.into()).await?;
        }
        if n < 1000 {
            return Ok(());
        }
    }
}

async fn send(outbox: &mut Outbox, event: EventOut) -> Result<(), Stopped> {
    // A serialization error (there is none for plain data) would end the stream.
    let data = Event::default()
        .event(event.event_type.clone())
        .json_data(&event)
        .map_err(|_| Stopped::ClientGone)?;
    outbox.send(event.sequence.to_string(), data).await
}
