//! The relay: the outbox of the event store. It follows the events table in commit order
//! and publishes each event to `<prefix>.events.vm.<provider>.<vm>.<Type>` (or
//! `<prefix>.events.catalog.<provider>.<Type>`), and each queued job to
//! `<prefix>.jobs.<provider>`, then moves its checkpoint. A crash between commit and
//! publish delays events, never loses them; one between publish and checkpoint publishes
//! again, and the streams drop the copies by `Nats-Msg-Id`.
//!
//! An event it can never publish (one its types cannot decode, or one larger than the
//! server's `max_payload`) is parked in `dead_letters` and the checkpoint moves past it:
//! the other VMs' events keep flowing. An admin's replay publishes it again on a later
//! pass. Any other publish error (NATS away) fails the pass, which is tried again.

mod envelope;

use bus::{Bus, Publisher, SendError};
use store::feed::{self, Cursor, FeedEvent};
use store::{dead_letters, lease};
use store::{sqlx, PgPool};
use tokio_util::sync::CancellationToken;

const CHECKPOINT: &str = "relay";
/// Events per pass: each pass costs a few round trips to Postgres and waits for its last
/// acks, so a pass should carry many.
const BATCH: i64 = 2000;
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
    for (event, error) in publish(pool, bus, &events).await? {
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
        match publish(pool, bus, std::slice::from_ref(event))
            .await?
            .first()
        {
            None => dead_letters::resolve(pool, *id).await?,
            Some((_, error)) => dead_letters::replay_failed(pool, *id, error).await?,
        }
    }
    Ok(due.len())
}

/// Publishes events and waits for every acknowledgement; does not move the checkpoint.
/// Returns the events it can never publish, each with why, for the caller to park.
pub async fn publish<'a>(
    pool: &PgPool,
    bus: &Bus,
    events: &'a [FeedEvent],
) -> Result<Vec<(&'a FeedEvent, String)>, RelayError> {
    let providers = envelope::providers(pool, events).await?;
    let mut publisher = Publisher::new(bus.jetstream.clone(), ACK_WINDOW);
    let mut poison = vec![];
    // The type of each event published, as its subject names it (the current name).
    let mut published = vec![];
    let limit = bus.payload_limit();
    for event in events {
        let (envelope, job) = match envelope::messages(&bus.subjects, event, &providers) {
            Ok(messages) => messages,
            Err(error) => {
                poison.push((event, error));
                continue;
            }
        };
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
        published.push(envelope.0.rsplit('.').next().unwrap_or_default().to_owned());
        for (subject, message_id, payload) in [Some(envelope), job].into_iter().flatten() {
            publisher
                .publish(subject, &message_id, payload.into())
                .await
                .map_err(SendError::from)?;
        }
    }
    publisher.flush().await.map_err(SendError::from)?;
    let metrics = telemetry::metrics();
    for event_type in &published {
        metrics.count_event(false, event_type);
    }
    Ok(poison)
}

/// The cursor the relay has published up to.
pub async fn checkpoint(pool: &PgPool) -> Result<Cursor, sqlx::Error> {
    feed::load_checkpoint(pool, CHECKPOINT).await
}
