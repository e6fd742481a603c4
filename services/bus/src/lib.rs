//! Everything the platform says over NATS: where (subjects), in which streams (created from
//! `nats/jetstream.toml`), what (wire messages), and how to publish many messages quickly
//! without losing track of their acknowledgements.

pub use async_nats;
pub use bytes::Bytes;

mod auth;
mod consumer;
mod definitions;
mod gauges;
mod messages;
mod publisher;
mod signing;
mod subjects;

pub use auth::{without_credentials, NatsAuth, RUNNER_INBOX_PREFIX};
pub use consumer::run_consumer;
pub use definitions::{consumer, durable_consumers, setup, SetupError, MAX_REPLICAS};
pub use gauges::{consumer_lags, ConsumerLag, JobCounts, LagUnread, PlatformGauges, VmCount};
pub use messages::{
    lost_job, EventEnvelope, JobMessage, RunnerMessage, RunnerReport, ENVELOPE_VERSION,
};
pub use publisher::{signed, Publisher, SendError};
pub use signing::{JobKey, RunnerKeys, SignatureError, MIN_MASTER_LEN, SIGNATURE_HEADER};
pub use subjects::{provider_token, Subjects, ALL_PROVIDERS};

/// A connection to NATS with the subject prefix of this deployment (or of one test).
#[derive(Clone)]
pub struct Bus {
    pub client: async_nats::Client,
    pub jetstream: async_nats::jetstream::Context,
    pub subjects: Subjects,
}

/// The servers of a `NATS_URL`: one URL, or several separated by commas (the nodes of a
/// cluster; the client tries them in turn and reconnects to another when one goes away).
pub fn server_urls(url: &str) -> Vec<&str> {
    url.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect()
}

/// Checks every server of a `NATS_URL` (see [`server_urls`]), so that a typo stops the start
/// with its name rather than leaving the client to retry it forever.
pub fn check_server_urls(url: &str) -> Result<(), String> {
    let servers = server_urls(url);
    if servers.is_empty() {
        return Err("names no server".into());
    }
    for server in servers {
        server
            .parse::<async_nats::ServerAddr>()
            .map_err(|e| format!("{server:?} is not a NATS URL: {e}"))?;
    }
    Ok(())
}

/// What a message's headers (`Nats-Msg-Id`, a signature) and subject may take of the
/// server's `max_payload`.
pub const HEADER_ROOM: usize = 4096;

impl Bus {
    /// The largest payload the platform publishes: the server's `max_payload` less
    /// [`HEADER_ROOM`]. The relay parks a larger event; the API refuses a request that
    /// would make one it cannot do without (a VM's job).
    pub fn payload_limit(&self) -> usize {
        self.client
            .server_info()
            .max_payload
            .saturating_sub(HEADER_ROOM)
    }

    /// Connects to the servers of `url` (one URL or a comma-separated list), retrying
    /// until one answers.
    pub async fn connect(url: &str, prefix: &str) -> Result<Self, async_nats::ConnectError> {
        Self::connect_as(url, prefix, &NatsAuth::Url).await
    }

    pub fn new(client: async_nats::Client, prefix: &str) -> Self {
        let jetstream = async_nats::jetstream::new(client.clone());
        Self {
            client,
            jetstream,
            subjects: Subjects::new(prefix),
        }
    }

    /// Publishes one runner message, signed with its job's `key`, and waits for its
    /// acknowledgement.
    pub async fn publish_runner_message(
        &self,
        key: &JobKey,
        message: &RunnerMessage,
    ) -> Result<(), SendError> {
        let mut publisher = Publisher::new(self.jetstream.clone(), 1);
        publisher
            .publish_runner(&self.subjects, key, message)
            .await?;
        Ok(publisher.flush().await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nats_url_may_list_several_servers() {
        assert_eq!(
            server_urls("nats://a:4222, nats://b:4222,,nats://c:4222 "),
            ["nats://a:4222", "nats://b:4222", "nats://c:4222"]
        );
        assert_eq!(
            server_urls("nats://127.0.0.1:4222"),
            ["nats://127.0.0.1:4222"]
        );
        assert!(check_server_urls("nats://a:4222,nats://b:4222").is_ok());
        assert!(check_server_urls(" , ").is_err());
        let error = check_server_urls("nats://a:4222,http://b:4222").unwrap_err();
        assert!(error.contains("http://b:4222"), "{error}");
    }
}
