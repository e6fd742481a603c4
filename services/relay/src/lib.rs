//! The relay: the outbox of the event store. It follows the events table in commit order
//! and publishes each event to `<prefix>.events.vm.<vm>.<type>`, and each queued job to
//! `<prefix>.jobs.<provider>`, then moves its checkpoint. A crash between commit and
//! publish delays events, never loses them; one between publish and checkpoint publishes
//! again, and the streams drop the copies by `Nats-Msg-Id`.
//!
//! An event it can never publish (one its types cannot decode, or one larger than the
//! server's `max_payload`) is parked in `dead_letters` and the checkpoint moves past it:
//! the other VMs' events keep flowing. An admin's replay publishes it again on a later
//! pass. Any other publish error (NATS away) fails the pass, which is tried again.

use bus::{Bus, EventEnvelope, JobMessage, Publisher, SendError};
use domain::provisioning::ProvisioningEvent;
use store::feed::{self, Cursor, FeedEvent};
use store::{dead_letters, lease};
use store::{sqlx, PgPool};
use tokio_util::sync::CancellationToken;

const CHECKPOINT: &str = "relay";
const BATCH: i64 = 500;
const ACK_WINDOW: usize = 256;

#[derive(Debug, thiserror::Error)]
pub enum RelayError {
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    #[error(transparent)]
    Send(#[from] SendError),
}

/// Runs the relay until cancelled. Only the replica holding the lease publishes.
pub async fn run(pool: PgPool, bus: Bus, cancel: CancellationToken) {
    lease::follow(&pool, CHECKPOINT, &cancel, || pass(&pool, &bus)).await;
}

/// Publishes the dead letters whose replay was asked for, then the next batch of events
/// after the checkpoint, and moves the checkpoint. Returns how many events it handled.
#[tracing::instrument(skip_all, err)]
pub async fn pass(pool: &PgPool, bus: &Bus) -> Result<usize, RelayError> {
    let replayed = replay(pool, bus).await?;
    let cursor = feed::load_checkpoint(pool, CHECKPOINT).await?;
    let events = feed::read_after(pool, cursor, BATCH).await?;
    let Some(last) = events.last().map(|e| e.cursor) else {
        return Ok(replayed);
    };
    for (event, error) in publish(bus, &events).await? {
        dead_letters::park(pool, CHECKPOINT, event, &error).await?;
    }
    feed::save_checkpoint(pool, CHECKPOINT, last).await?;
    Ok(replayed + events.len())
}

/// Publishes the dead letters an admin asked to replay; each is resolved, or keeps its
/// new error.
async fn replay(pool: &PgPool, bus: &Bus) -> Result<usize, RelayError> {
    let due = dead_letters::replays_due(pool, CHECKPOINT).await?;
    for (id, event) in &due {
        match publish(bus, std::slice::from_ref(event)).await?.first() {
            None => dead_letters::resolve(pool, *id).await?,
            Some((_, error)) => dead_letters::replay_failed(pool, *id, error).await?,
        }
    }
    Ok(due.len())
}

/// Publishes events and waits for every acknowledgement; does not move the checkpoint.
/// Returns the events it can never publish, each with why, for the caller to park.
pub async fn publish<'a>(
    bus: &Bus,
    events: &'a [FeedEvent],
) -> Result<Vec<(&'a FeedEvent, String)>, RelayError> {
    let mut publisher = Publisher::new(bus.jetstream.clone(), ACK_WINDOW);
    let mut poison = vec![];
    for event in events {
        let (envelope, job) = match messages(bus, event) {
            Ok(messages) => messages,
            Err(error) => {
                poison.push((event, error));
                continue;
            }
        };
        let limit = max_payload(bus);
        if let Some(size) = [Some(&envelope), job.as_ref()]
            .into_iter()
            .flatten()
            .map(|(_, _, payload)| payload.len())
            .find(|&size| size > limit)
        {
            poison.push((
                event,
                format!("{size} bytes is more than the {limit} a NATS message may carry"),
            ));
            continue;
        }
        for (subject, message_id, payload) in [Some(envelope), job].into_iter().flatten() {
            publisher
                .publish(subject, &message_id, payload.into())
                .await
                .map_err(SendError::from)?;
        }
    }
    publisher.flush().await.map_err(SendError::from)?;
    Ok(poison)
}

/// The server's `max_payload`, less room for the headers (`Nats-Msg-Id`) and subject.
fn max_payload(bus: &Bus) -> usize {
    bus.client.server_info().max_payload.saturating_sub(4096)
}

/// A message to publish: subject, message id, payload.
type Outgoing = (String, String, Vec<u8>);

/// The envelope of an event, and its job message if it queues a job; or why it cannot be
/// published.
fn messages(bus: &Bus, event: &FeedEvent) -> Result<(Outgoing, Option<Outgoing>), String> {
    let decoded = event.provisioning().map_err(|e| e.to_string())?;
    if event.payload.is_null() {
        return Err(format!(
            "event {}/{}/{} has a payload that is not JSON",
            event.aggregate_type, event.aggregate_id, event.sequence
        ));
    }
    // Named as this version names the event: one stored by an earlier version under an
    // older name (`AddressChanged`) is published under its current one (`IpChanged`).
    let event_type = match &decoded {
        Some((_, e)) => e.name().to_owned(),
        None => event.event_type.clone(),
    };
    let envelope = EventEnvelope {
        version: 1,
        aggregate_type: event.aggregate_type.clone(),
        aggregate_id: event.aggregate_id.clone(),
        sequence: event.sequence,
        event_type: event_type.clone(),
        recorded_at: event.recorded_at,
        actor: event.actor(),
        data: event
            .payload
            .get("data")
            .cloned()
            .unwrap_or_else(|| serde_json::json!({})),
    };
    let subject = bus
        .subjects
        .event(&event.aggregate_type, &event.aggregate_id, &event_type);
    let message_id = format!(
        "{}:{}:{}",
        event.aggregate_type, event.aggregate_id, event.sequence
    );
    let encode = |e: serde_json::Error| e.to_string();
    let envelope = (
        subject,
        message_id,
        serde_json::to_vec(&envelope).map_err(encode)?,
    );
    let job = match decoded {
        Some((
            vm_id,
            ProvisioningEvent::JobQueued {
                job_id,
                action,
                spec,
            },
        )) => {
            let job = JobMessage {
                vm_id,
                job_id,
                action,
                spec,
            };
            let subject = bus.subjects.job(&job.spec.provider);
            let payload = serde_json::to_vec(&job).map_err(encode)?;
            Some((subject, job.message_id(event.sequence), payload))
        }
        _ => None,
    };
    Ok((envelope, job))
}

/// The cursor the relay has published up to.
pub async fn checkpoint(pool: &PgPool) -> Result<Cursor, sqlx::Error> {
    feed::load_checkpoint(pool, CHECKPOINT).await
}
