use std::collections::VecDeque;

use async_nats::jetstream::context::{PublishAckFuture, PublishError};
use async_nats::jetstream::message::PublishMessage;
use async_nats::jetstream::publish::PublishAck;
use async_nats::jetstream::Context;
use bytes::Bytes;
use serde::Serialize;

use crate::{JobKey, RunnerMessage, Subjects, SIGNATURE_HEADER};

/// A runner message as JetStream gets it: signed by its job's key, with a `Nats-Msg-Id`
/// that deduplicates a report sent again. The id ends with the signature's first bytes:
/// another job's runner, which cannot make the signature, cannot take a report's id first
/// and have the genuine report dropped as its duplicate.
pub fn signed(key: &JobKey, subject: &str, message_id: &str, payload: Bytes) -> PublishMessage {
    let signature = key.sign(subject, &payload);
    PublishMessage::build()
        .payload(payload)
        .message_id(format!("{message_id}:{}", &signature[..16]))
        .header(SIGNATURE_HEADER, signature.as_str())
}

/// Why a message was not published.
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    #[error("could not encode the message: {0}")]
    Encode(#[from] serde_json::Error),
    #[error("could not publish to JetStream: {0}")]
    Publish(#[from] PublishError),
}

/// Publishes to JetStream with a bounded window of acknowledgements in flight: fast like
/// pipelining, yet a message counts as published only once its ack arrived. Storing
/// thousands of unawaited ack futures stalls async-nats, hence the bound.
pub struct Publisher {
    jetstream: Context,
    window: usize,
    in_flight: VecDeque<PublishAckFuture>,
}

impl Publisher {
    pub fn new(jetstream: Context, window: usize) -> Self {
        Self {
            jetstream,
            window: window.max(1),
            in_flight: VecDeque::new(),
        }
    }

    pub async fn publish(
        &mut self,
        subject: String,
        message_id: &str,
        payload: Bytes,
    ) -> Result<(), PublishError> {
        let message = PublishMessage::build()
            .payload(payload)
            .message_id(message_id);
        self.send(subject, message).await
    }

    async fn send(&mut self, subject: String, message: PublishMessage) -> Result<(), PublishError> {
        if self.in_flight.len() >= self.window {
            self.await_oldest().await?;
        }
        let ack = self.jetstream.send_publish(subject, message).await?;
        self.in_flight.push_back(ack);
        Ok(())
    }

    /// Publishes `value` as JSON.
    pub async fn publish_json<T: Serialize>(
        &mut self,
        subject: String,
        message_id: &str,
        value: &T,
    ) -> Result<(), SendError> {
        let payload = serde_json::to_vec(value)?;
        Ok(self.publish(subject, message_id, payload.into()).await?)
    }

    /// Publishes a runner message on the subject of its job and kind, signed with `key`,
    /// the key of its job.
    pub async fn publish_runner(
        &mut self,
        subjects: &Subjects,
        key: &JobKey,
        message: &RunnerMessage,
    ) -> Result<(), SendError> {
        let subject = subjects.runner(message.vm_id, message.job_id, message.report.subject_kind());
        let payload = serde_json::to_vec(message)?;
        let message = signed(key, &subject, &message.message_id(), payload.into());
        Ok(self.send(subject, message).await?)
    }

    /// Waits for every acknowledgement still in flight.
    pub async fn flush(&mut self) -> Result<(), PublishError> {
        while !self.in_flight.is_empty() {
            self.await_oldest().await?;
        }
        Ok(())
    }

    async fn await_oldest(&mut self) -> Result<Option<PublishAck>, PublishError> {
        match self.in_flight.pop_front() {
            Some(ack) => ack.await.map(Some),
            None => Ok(None),
        }
    }
}
