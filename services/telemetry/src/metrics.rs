//! The metrics of the process, served by `GET /metrics` in the Prometheus text format.
//!
//! One registry per process, like the tracing subscriber: every role (api, relay, ingester,
//! dispatcher) counts in [`metrics()`] without depending on the others. The platform gauges
//! are computed by the one replica holding the gauges lease and published on
//! `<prefix>.gauges.platform`; every replica serving the API sets them from that message, so
//! each answers the same gauges.

use std::sync::atomic::AtomicU64;
use std::sync::OnceLock;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

/// The content type of [`Metrics::encode`]'s text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct HttpLabels {
    /// The matched route template (`/api/v1/vms/{id}`), never the raw path.
    pub route: String,
    pub method: String,
    pub status: u16,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TypeLabels {
    pub r#type: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RunnerLabels {
    pub provider: String,
    /// `started`, or `failed` when the executor could not start the runner.
    pub outcome: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct VmLabels {
    pub status: String,
    pub provider: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct JobLabels {
    /// `running` or `queued`.
    pub state: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ConsumerLabels {
    pub stream: String,
    pub consumer: String,
}

type Histograms<L> = Family<L, Histogram, fn() -> Histogram>;

fn latency_histogram() -> Histogram {
    // 1 ms to about 16 s.
    Histogram::new(exponential_buckets(0.001, 2.0, 15))
}

/// Every metric the process serves.
pub struct Metrics {
    registry: Registry,
    pub http_requests: Family<HttpLabels, Counter>,
    pub http_duration: Histograms<HttpLabels>,
    pub events_committed: Family<TypeLabels, Counter>,
    pub events_relayed: Family<TypeLabels, Counter>,
    pub ingester_batches: Counter,
    pub ingester_messages: Counter,
    pub stream_messages_dropped: Counter,
    pub runner_starts: Family<RunnerLabels, Counter>,
    pub vms: Family<VmLabels, Gauge>,
    pub jobs: Family<JobLabels, Gauge>,
    pub consumer_lag: Family<ConsumerLabels, Gauge>,
    pub oldest_running_job: Gauge<f64, AtomicU64>,
    pub gauges_published_at: Gauge,
}

impl Metrics {
    fn new() -> Self {
        let mut registry = Registry::default();
        let http_requests = Family::default();
        registry.register(
            "provisioning_http_requests",
            "HTTP requests answered, by route template, method and status",
            http_requests.clone(),
        );
        let http_duration = Histograms::new_with_constructor(latency_histogram as fn() -> _);
        registry.register(
            "provisioning_http_request_duration_seconds",
            "How long HTTP requests took to answer (for streams: to start answering)",
            http_duration.clone(),
        );
        let events_committed = Family::default();
        registry.register(
            "provisioning_events_committed",
            "Events this process committed to the event store, by event type",
            events_committed.clone(),
        );
        let events_relayed = Family::default();
        registry.register(
            "provisioning_events_relayed",
            "Events the relay published to JetStream (acknowledged), by event type",
            events_relayed.clone(),
        );
        let ingester_batches = Counter::default();
        registry.register(
            "provisioning_ingester_batches",
            "Batches of runner messages the ingester applied",
            ingester_batches.clone(),
        );
        let ingester_messages = Counter::default();
        registry.register(
            "provisioning_ingester_messages",
            "Runner messages the ingester applied",
            ingester_messages.clone(),
        );
        let stream_messages_dropped = Counter::default();
        registry.register(
            "provisioning_stream_messages_dropped",
            "Live events NATS dropped for a stream's full subscription (the stream read them \
             from Postgres instead)",
            stream_messages_dropped.clone(),
        );
        let runner_starts = Family::default();
        registry.register(
            "provisioning_runner_starts",
            "Runners the dispatcher started, by provider and outcome (started, failed)",
            runner_starts.clone(),
        );
        let vms = Family::default();
        registry.register(
            "provisioning_vms",
            "VMs by status and provider (platform gauge)",
            vms.clone(),
        );
        let jobs = Family::default();
        registry.register(
            "provisioning_jobs",
            "Terraform jobs running and queued (platform gauge)",
            jobs.clone(),
        );
        let consumer_lag = Family::default();
        registry.register(
            "provisioning_consumer_lag",
            "Messages of each durable consumer not yet delivered or not yet acknowledged \
             (platform gauge)",
            consumer_lag.clone(),
        );
        let oldest_running_job = Gauge::default();
        registry.register(
            "provisioning_oldest_running_job_seconds",
            "Age of the oldest running job, 0 when none runs (platform gauge)",
            oldest_running_job.clone(),
        );
        let gauges_published_at = Gauge::default();
        registry.register(
            "provisioning_gauges_published_at_seconds",
            "When the platform gauges were computed (Unix time)",
            gauges_published_at.clone(),
        );
        Self {
            registry,
            http_requests,
            http_duration,
            events_committed,
            events_relayed,
            ingester_batches,
            ingester_messages,
            stream_messages_dropped,
            runner_starts,
            vms,
            jobs,
            consumer_lag,
            oldest_running_job,
            gauges_published_at,
        }
    }

    /// Every metric in the text format of `GET /metrics`.
    pub fn encode(&self) -> String {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry)
            .expect("writing to a String cannot fail");
        text
    }

    /// Counts one event committed (`committed`) or relayed.
    pub fn count_event(&self, committed: bool, event_type: &str) {
        let family = if committed {
            &self.events_committed
        } else {
            &self.events_relayed
        };
        family
            .get_or_create(&TypeLabels {
                r#type: event_type.to_owned(),
            })
            .inc();
    }

    pub fn count_runner_start(&self, provider: &str, started: bool) {
        let outcome = if started { "started" } else { "failed" };
        self.runner_starts
            .get_or_create(&RunnerLabels {
                provider: provider.to_owned(),
                outcome: outcome.to_owned(),
            })
            .inc();
    }
}

/// The registry of this process.
pub fn metrics() -> &'static Metrics {
    static METRICS: OnceLock<Metrics> = OnceLock::new();
    METRICS.get_or_init(Metrics::new)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_and_gauges_are_served_by_name_with_their_labels() {
        let metrics = Metrics::new();
        metrics.count_event(true, "Failed");
        metrics.count_runner_start("local", false);
        metrics
            .vms
            .get_or_create(&VmLabels {
                status: "ready".into(),
                provider: "azure".into(),
            })
            .set(3);
        let text = metrics.encode();
        assert!(
            text.contains("provisioning_events_committed_total{type=\"Failed\"} 1"),
            "{text}"
        );
        assert!(text
            .contains("provisioning_runner_starts_total{provider=\"local\",outcome=\"failed\"} 1"));
        assert!(text.contains("provisioning_vms{status=\"ready\",provider=\"azure\"} 3"));
        assert!(text.ends_with("# EOF\n"));
    }
}
