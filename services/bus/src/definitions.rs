//! Creates the streams and consumers of `nats/jetstream.toml`.

use std::time::Duration;

use async_nats::jetstream::consumer::{pull, AckPolicy};
use async_nats::jetstream::stream::{self, RetentionPolicy, StorageType};
use serde::Deserialize;

use crate::{Bus, Subjects};

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

/// The most replicas JetStream keeps of a stream.
pub const MAX_REPLICAS: usize = 5;

/// Creates or updates every stream and consumer; safe to run at every start. `replicas`
/// is how many servers of a JetStream cluster keep each stream (1 on a single server);
/// the consumers follow their stream's.
#[tracing::instrument(skip_all, fields(prefix = bus.subjects.prefix(), replicas), err)]
pub async fn setup(bus: &Bus, replicas: usize) -> Result<(), SetupError> {
    let defs: Definitions = toml::from_str(DEFINITIONS)?;
    for config in stream_configs(&defs, &bus.subjects, replicas)? {
        let name = config.name.clone();
        bus.jetstream
            .create_or_update_stream(config)
            .await
            .map_err(|source| SetupError::Stream { name, source })?;
    }
    for (stream, config) in consumer_configs(&defs, &bus.subjects) {
        let name = config.durable_name.clone().unwrap_or_default();
        bus.jetstream
            .create_consumer_on_stream(config, stream)
            .await
            .map_err(|e| SetupError::Consumer {
                name,
                source: e.into(),
            })?;
    }
    Ok(())
}

/// The streams of the file, as JetStream configurations: the only place their settings are
/// written is `nats/jetstream.toml`.
fn stream_configs(
    defs: &Definitions,
    subjects: &Subjects,
    replicas: usize,
) -> Result<Vec<stream::Config>, SetupError> {
    defs.streams
        .iter()
        .map(|def| {
            let retention = match def.retention.as_str() {
                "limits" => RetentionPolicy::Limits,
                "workqueue" => RetentionPolicy::WorkQueue,
                "interest" => RetentionPolicy::Interest,
                other => return Err(SetupError::Retention(other.to_owned())),
            };
            Ok(stream::Config {
                name: subjects.stream(&def.name),
                subjects: def.subjects.iter().map(|s| subjects.expand(s)).collect(),
                retention,
                storage: StorageType::File,
                max_age: Duration::from_secs(def.max_age_secs),
                duplicate_window: Duration::from_secs(def.duplicate_window_secs),
                num_replicas: replicas.clamp(1, MAX_REPLICAS),
                ..Default::default()
            })
        })
        .collect()
}

/// The durable consumers of the file, each with the name of its stream.
fn consumer_configs(defs: &Definitions, subjects: &Subjects) -> Vec<(String, pull::Config)> {
    defs.consumers
        .iter()
        .map(|def| {
            let config = pull::Config {
                durable_name: Some(def.name.clone()),
                filter_subject: subjects.expand(&def.filter_subject),
                ack_policy: AckPolicy::Explicit,
                ack_wait: Duration::from_secs(def.ack_wait_secs),
                max_deliver: def.max_deliver,
                max_ack_pending: def.max_ack_pending,
                ..Default::default()
            };
            (subjects.stream(&def.stream), config)
        })
        .collect()
}

/// Every durable consumer of `nats/jetstream.toml`: its stream's definition name (`JOBS`)
/// and its name.
pub fn durable_consumers() -> Vec<(String, String)> {
    let defs: Definitions = toml::from_str(DEFINITIONS).expect("nats/jetstream.toml parses");
    defs.consumers
        .into_iter()
        .map(|c| (c.stream, c.name))
        .collect()
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

#[cfg(test)]
mod tests {
    use super::*;

    fn definitions() -> Definitions {
        toml::from_str(DEFINITIONS).expect("nats/jetstream.toml parses")
    }

    #[test]
    fn every_stream_of_the_file_becomes_a_configuration_under_the_prefix() {
        let subjects = Subjects::new("t1");
        let streams = stream_configs(&definitions(), &subjects, 1).unwrap();
        let names: Vec<&str> = streams.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["T1_EVENTS", "T1_JOBS", "T1_RUNNER"]);
        assert!(streams.iter().all(|s| s.num_replicas == 1));
        assert!(streams
            .iter()
            .all(|s| s.subjects.iter().all(|subject| subject.starts_with("t1."))));
    }

    #[test]
    fn every_stream_gets_the_replicas_asked_for() {
        let subjects = Subjects::new("t1");
        let streams = stream_configs(&definitions(), &subjects, 3).unwrap();
        assert!(streams.iter().all(|s| s.num_replicas == 3));
        // The consumers inherit their stream's replicas (0 means "as the stream").
        let consumers = consumer_configs(&definitions(), &subjects);
        assert!(consumers.iter().all(|(_, c)| c.num_replicas == 0));
    }

    #[test]
    fn the_consumers_the_roles_open_are_in_the_file_and_never_drop_a_message() {
        let subjects = Subjects::new("t1");
        let consumers = consumer_configs(&definitions(), &subjects);
        // `dispatcher` and `ingester` open these by name (`bus::consumer`).
        for (stream, name) in [("T1_JOBS", "dispatcher"), ("T1_RUNNER", "ingester")] {
            let (_, config) = consumers
                .iter()
                .find(|(s, c)| s == stream && c.durable_name.as_deref() == Some(name))
                .unwrap_or_else(|| panic!("{stream}/{name} is defined"));
            assert_eq!(config.max_deliver, -1, "{name}: a message is never dropped");
            assert_eq!(config.ack_policy, AckPolicy::Explicit);
        }
    }

    #[test]
    fn one_jobs_waiting_lines_do_not_fill_the_ingesters_pending_window() {
        let defs = definitions();
        let ingester = defs
            .consumers
            .iter()
            .find(|c| c.name == "ingester")
            .expect("the ingester is defined");
        // The ingester pulls up to 500 at a time; a job that prints thousands of lines
        // while one is late keeps them pending, and must leave room for the others.
        assert!(
            ingester.max_ack_pending >= 10_000,
            "{}",
            ingester.max_ack_pending
        );
    }
}
