//! Everything the platform says over NATS: where (subjects), in which streams (created from
//! `nats/jetstream.toml`), what (wire messages), and how to publish many messages quickly
//! without losing track of their acknowledgements.

pub use async_nats;
pub use bytes::Bytes;

mod consumer;
mod definitions;
mod messages;
mod publisher;
mod subjects;

pub use consumer::run_consumer;
pub use definitions::{consumer, setup, SetupError};
pub use messages::{lost_job, EventEnvelope, JobMessage, RunnerMessage, RunnerReport};
pub use publisher::{Publisher, SendError};
pub use subjects::Subjects;

/// A connection to NATS with the subject prefix of this deployment (or of one test).
#[derive(Clone)]
pub struct Bus {
    pub client: async_nats::Client,
    pub jetstream: async_nats::jetstream::Context,
    pub subjects: Subjects,
}

impl Bus {
    pub async fn connect(url: &str, prefix: &str) -> Result<Self, async_nats::ConnectError> {
        let client = async_nats::ConnectOptions::new()
            .name("provisioning")
            .retry_on_initial_connect()
            .connect(url)
            .await?;
        Ok(Self::new(client, prefix))
    }

    pub fn new(client: async_nats::Client, prefix: &str) -> Self {
        let jetstream = async_nats::jetstream::new(client.clone());
        Self {
            client,
            jetstream,
            subjects: Subjects::new(prefix),
        }
    }

    /// Publishes one runner message and waits for its acknowledgement.
    pub async fn publish_runner_message(&self, message: &RunnerMessage) -> Result<(), SendError> {
        let mut publisher = Publisher::new(self.jetstream.clone(), 1);
        publisher.publish_runner(&self.subjects, message).await?;
        Ok(publisher.flush().await?)
    }
}
