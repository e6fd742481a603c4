//! The loop of a role that works through a durable pull consumer (the dispatcher, the
//! ingester): pull, hand over, and connect again when the consumer fails.

use std::future::Future;
use std::time::Duration;

use async_nats::jetstream::AckKind;
use async_nats::jetstream::Message;
use futures::{FutureExt, Stream, StreamExt};
use tokio_util::sync::CancellationToken;

use crate::Bus;

/// Hands the messages of the durable consumer `durable` of `stream` to `handle` until
/// `cancel`: what has arrived at once, at most `batch` at a time. A failed pull (a missed
/// heartbeat) is logged and passed over, so the messages that did arrive are still handled;
/// when `handle` fails, the consumer is connected again a second later, and at once when
/// its message stream ends.
pub async fn run_consumer<F, Fut>(
    bus: &Bus,
    stream: &str,
    durable: &str,
    batch: usize,
    cancel: &CancellationToken,
    mut handle: F,
) where
    F: FnMut(Vec<Message>) -> Fut,
    Fut: Future<Output = Result<(), async_nats::Error>>,
{
    while !cancel.is_cancelled() {
        if let Err(e) = consume(bus, stream, durable, batch, cancel, &mut handle).await {
            tracing::error!(consumer = durable, error = %e, "consumer failed; reconnecting");
            tokio::select! {
                _ = cancel.cancelled() => return,
                _ = tokio::time::sleep(Duration::from_secs(1)) => {}
            }
        }
    }
}

async fn consume<F, Fut>(
    bus: &Bus,
    stream: &str,
    durable: &str,
    batch: usize,
    cancel: &CancellationToken,
    handle: &mut F,
) -> Result<(), async_nats::Error>
where
    F: FnMut(Vec<Message>) -> Fut,
    Fut: Future<Output = Result<(), async_nats::Error>>,
{
    let consumer = crate::consumer(bus, stream, durable).await?;
    // Each pull asks for a whole batch (never fewer than the client's default 200), so
    // that while one batch is handled the next one gathers: small batches would make the
    // per-batch commit, not the machine, the limit.
    let messages = consumer
        .stream()
        .max_messages_per_batch(batch.max(200))
        .heartbeat(Duration::from_secs(15))
        .messages()
        .await?;
    let mut batches = messages.ready_chunks(batch.max(1));
    loop {
        let batch = tokio::select! {
            _ = cancel.cancelled() => {
                give_back(&mut batches, durable).await;
                return Ok(());
            }
            // Without the task's cooperative budget, which would end a batch at 128
            // messages however many have arrived.
            b = tokio::task::unconstrained(batches.next()) => b,
        };
        // The stream ends on an error it cannot go on from: connect again.
        let Some(batch) = batch else { return Ok(()) };
        let messages: Vec<Message> = batch
            .into_iter()
            .filter_map(|m| {
                m.map_err(
                    |e| tracing::warn!(consumer = durable, error = %e, "pull error; going on"),
                )
                .ok()
            })
            .collect();
        if !messages.is_empty() {
            handle(messages).await?;
        }
    }
}

/// On shutdown, naks the messages the client already pulled and this role will not handle,
/// so another replica (or this one, restarted) gets them at once instead of after the
/// consumer's ack wait.
async fn give_back<S, E>(batches: &mut S, durable: &str)
where
    S: Stream<Item = Vec<Result<Message, E>>> + Unpin,
{
    let mut given = 0;
    while let Some(Some(batch)) = batches.next().now_or_never() {
        for message in batch.into_iter().flatten() {
            if message.ack_with(AckKind::Nak(None)).await.is_ok() {
                given += 1;
            }
        }
    }
    if given > 0 {
        tracing::info!(
            consumer = durable,
            given,
            "gave back the messages not handled"
        );
    }
}
