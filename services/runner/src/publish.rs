//! Publishing that survives a NATS outage: a message whose send or acknowledgement fails is
//! sent again, with every later one still unacknowledged, in order and under the same
//! `Nats-Msg-Id` (JetStream's deduplication keeps one copy; the ingester drops any line it
//! has already recorded), until it is acknowledged or `retry_for` has passed.

use std::collections::VecDeque;
use std::time::Duration;

use bus::async_nats::jetstream::context::{PublishAckFuture, PublishError};
use bus::async_nats::jetstream::Context;
use bus::{Bytes, JobKey};
use tokio::time::Instant;

/// One message not yet acknowledged.
struct Pending {
    subject: String,
    id: String,
    payload: Bytes,
    /// `None` until it was sent (again).
    ack: Option<PublishAckFuture>,
}

/// Publishes with a bounded window of acknowledgements in flight (like `bus::Publisher`),
/// retrying failures.
pub(crate) struct RetryingPublisher {
    jetstream: Context,
    /// Signs every message (`bus::signed`).
    key: JobKey,
    window: usize,
    retry_for: Duration,
    pending: VecDeque<Pending>,
}

const FIRST_BACKOFF: Duration = Duration::from_millis(250);
const MAX_BACKOFF: Duration = Duration::from_secs(5);

impl RetryingPublisher {
    pub(crate) fn new(jetstream: Context, key: JobKey, window: usize, retry_for: Duration) -> Self {
        Self {
            jetstream,
            key,
            window: window.max(1),
            retry_for,
            pending: VecDeque::new(),
        }
    }

    pub(crate) async fn publish(
        &mut self,
        subject: String,
        id: String,
        payload: Bytes,
    ) -> Result<(), PublishError> {
        if self.pending.len() >= self.window {
            self.settle_oldest().await?;
        }
        let message = bus::signed(&self.key, &subject, &id, payload.clone());
        // A failed send is retried with the oldest message's acknowledgement.
        let ack = self
            .jetstream
            .send_publish(subject.clone(), message)
            .await
            .ok();
        self.pending.push_back(Pending {
            subject,
            id,
            payload,
            ack,
        });
        Ok(())
    }

    /// Waits until every message is acknowledged.
    pub(crate) async fn flush(&mut self) -> Result<(), PublishError> {
        while !self.pending.is_empty() {
            self.settle_oldest().await?;
        }
        Ok(())
    }

    /// Waits for the oldest message's acknowledgement; on failure sends it and every later
    /// message again, until acknowledged or the retry time is over.
    async fn settle_oldest(&mut self) -> Result<(), PublishError> {
        let mut deadline = None;
        let mut backoff = FIRST_BACKOFF;
        loop {
            let Some(oldest) = self.pending.front_mut() else {
                return Ok(());
            };
            let error = match oldest.ack.take() {
                Some(ack) => match ack.await {
                    Ok(_) => {
                        self.pending.pop_front();
                        return Ok(());
                    }
                    Err(e) => e,
                },
                None => match self.resend().await {
                    Ok(()) => continue,
                    Err(e) => e,
                },
            };
            let deadline = *deadline.get_or_insert_with(|| Instant::now() + self.retry_for);
            if Instant::now() >= deadline {
                return Err(error);
            }
            tracing::warn!(
                error = %error,
                unacknowledged = self.pending.len(),
                retry_in_ms = backoff.as_millis() as u64,
                "a publish failed; sending again"
            );
            tokio::time::sleep(backoff.min(deadline - Instant::now())).await;
            backoff = (backoff * 2).min(MAX_BACKOFF);
            // Every unacknowledged message goes again, in order.
            for pending in &mut self.pending {
                pending.ack = None;
            }
        }
    }

    /// Sends the messages that have not been sent since the last failure, in order.
    async fn resend(&mut self) -> Result<(), PublishError> {
        for pending in &mut self.pending {
            if pending.ack.is_some() {
                continue;
            }
            let message = bus::signed(
                &self.key,
                &pending.subject,
                &pending.id,
                pending.payload.clone(),
            );
            pending.ack = Some(
                self.jetstream
                    .send_publish(pending.subject.clone(), message)
                    .await?,
            );
        }
        Ok(())
    }
}
