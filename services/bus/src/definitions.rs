//! Creates the streams and consumers of `nats/jetstream.toml`.

use std::time::Duration;

use async_nats::jetstream::consumer::{pull, AckPolicy};
use async_nats::jetstream::stream::{self, RetentionPolicy, StorageType};
use serde::Deserialize;

use crate::Bus;

const DEFINITIONS: &str = include_str!("../../../nats/jetstream.toml");

#[derive(Debug, Deserialize)]
struct Definitions {
    streams: Vec<StreamDef>,
    consumers: Vec<ConsumerDef>,
}

#[derive(Debug, Deserialize)]
struct StreamDef {
    name: String,
    subjects: Vec<String>,
    retention: String,
    max_age_secs: u64,
    duplicate_window_secs: u64,
}

#[derive(Debug, Deserialize)]
struct ConsumerDef {
    stream: String,
    name: String,
    filter_subject: String,
    ack_wait_secs: u64,
    max_deliver: i64,
    max_ack_pending: i64,
}

#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error("nats/jetstream.toml is invalid: {0}")]
    Definitions(#[from] toml::de::Error),
    #[error("unknown retention {0:?} in nats/jetstream.toml")]
    Retention(String),
    #[error("could not create stream {name}: {source}")]
    Stream {
        name: String,
        source: async_nats::jetstream::context::CreateStreamError,
    },
    #[error("could not create consumer {name}: {source}")]
    Consumer {
        name: String,
        source: async_nats::Error,
    },
}

/// Creates or updates every stream and consumer; safe to run at every start.
#[tracing::instrument(skip_all, fields(prefix = bus.subjects.prefix()), err)]
pub async fn setup(bus: &Bus) -> Result<(), SetupError> {
    let defs: Definitions = toml::from_str(DEFINITIONS)?;
    for def in &defs.streams {
        let name = bus.subjects.stream(&def.name);
        let retention = match def.retention.as_str() {
            "limits" => RetentionPolicy::Limits,
            "workqueue" => RetentionPolicy::WorkQueue,
            "interest" => RetentionPolicy::Interest,
            other => return Err(SetupError::Retention(other.to_owned())),
        };
        let config = stream::Config {
            name: name.clone(),
            subjects: def
                .subjects
                .iter()
                .map(|s| bus.subjects.expand(s))
                .collect(),
            retention,
            storage: StorageType::File,
            max_age: Duration::from_secs(def.max_age_secs),
            duplicate_window: Duration::from_secs(def.duplicate_window_secs),
            ..Default::default()
        };
        bus.jetstream
            .create_or_update_stream(config)
            .await
            .map_err(|source| SetupError::Stream { name, source })?;
    }
    for def in &defs.consumers {
        let stream = bus.subjects.stream(&def.stream);
        let config = pull::Config {
            durable_name: Some(def.name.clone()),
            filter_subject: bus.subjects.expand(&def.filter_subject),
            ack_policy: AckPolicy::Explicit,
            ack_wait: Duration::from_secs(def.ack_wait_secs),
            max_deliver: def.max_deliver,
            max_ack_pending: def.max_ack_pending,
            ..Default::default()
        };
        bus.jetstream
            .create_consumer_on_stream(config, stream)
            .await
            .map_err(|e| SetupError::Consumer {
                name: def.name.clone(),
                source: e.into(),
            })?;
    }
    Ok(())
}

/// The durable pull consumer of one role, created by `setup`.
pub async fn consumer(
    bus: &Bus,
    stream: &str,
    name: &str,
) -> Result<async_nats::jetstream::consumer::PullConsumer, async_nats::Error> {
    let stream = bus
        .jetstream
        .get_stream(bus.subjects.stream(stream))
        .await?;
    stream.get_consumer(name).await
}
