//! The relay: the outbox of the event store. It follows the events table in commit order
//! and publishes each event to `<prefix>.events.vm.<vm>.<type>`, and each queued job to
//! `<prefix>.jobs.<provider>`, then moves its checkpoint. A crash between commit and
//! publish delays events, never loses them; one between publish and checkpoint publishes
//! again, and the streams drop the copies by `Nats-Msg-Id`.

use bus::{Bus, EventEnvelope, JobMessage, Publisher, SendError};
use domain::provisioning::ProvisioningEvent;
use store::feed::{self, Cursor, FeedEvent, UndecodableEvent};
use store::lease;
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
    Undecodable(#[from] UndecodableEvent),
    #[error(transparent)]
    Send(#[from] SendError),
}

/// Runs the relay until cancelled. Only the replica holding the lease publishes.
pub async fn run(pool: PgPool, bus: Bus, cancel: CancellationToken) {
    lease::follow(&pool, CHECKPOINT, &cancel, || pass(&pool, &bus)).await;
}

/// Publishes the next batch of events after the checkpoint and moves the checkpoint.
/// Returns how many events it published.
#[tracing::instrument(skip_all, err)]
pub async fn pass(pool: &PgPool, bus: &Bus) -> Result<usize, RelayError> {
    let cursor = feed::load_checkpoint(pool, CHECKPOINT).await?;
    let events = feed::read_after(pool, cursor, BATCH).await?;
    let Some(last) = events.last().map(|e| e.cursor) else {
        return Ok(0);
    };
    publish(bus, &events).await?;
    feed::save_checkpoint(pool, CHECKPOINT, last).await?;
    Ok(events.len())
}

/// Publishes events and waits for every acknowledgement; does not move the checkpoint.
pub async fn publish(bus: &Bus, events: &[FeedEvent]) -> Result<(), RelayError> {
    let mut publisher = Publisher::new(bus.jetstream.clone(), ACK_WINDOW);
    for event in events {
        let envelope = EventEnvelope {
            version: 1,
            aggregate_type: event.aggregate_type.clone(),
            aggregate_id: event.aggregate_id.clone(),
            sequence: event.sequence,
            event_type: event.event_type.clone(),
            recorded_at: event.recorded_at,
            actor: event.actor(),
            data: event
                .payload
                .get("data")
                .cloned()
                .unwrap_or_else(|| serde_json::json!({})),
        };
        let subject = bus.subjects.event(
            &event.aggregate_type,
            &event.aggregate_id,
            &event.event_type,
        );
        let message_id = format!(
            "{}:{}:{}",
            event.aggregate_type, event.aggregate_id, event.sequence
        );
        publisher
            .publish_json(subject, &message_id, &envelope)
            .await?;
        if let Some((
            vm_id,
            ProvisioningEvent::JobQueued {
                job_id,
                action,
                spec,
            },
        )) = event.provisioning()?
        {
            let job = JobMessage {
                vm_id,
                job_id,
                action,
                spec,
            };
            let subject = bus.subjects.job(&job.spec.provider);
            publisher
                .publish_json(subject, &job.message_id(), &job)
                .await?;
        }
    }
    publisher.flush().await.map_err(SendError::from)?;
    Ok(())
}

/// The cursor the relay has published up to.
pub async fn checkpoint(pool: &PgPool) -> Result<Cursor, sqlx::Error> {
    feed::load_checkpoint(pool, CHECKPOINT).await
}
