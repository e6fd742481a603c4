//! The platform gauges, one publisher in the whole deployment (a lease): every 10 s it
//! counts VMs by status and provider, jobs running and queued, the age of the oldest
//! running job (from the read model) and each durable consumer's lag (from JetStream), and
//! publishes them on `<prefix>.gauges.platform` (core NATS: not kept, the next comes soon).
//! Every replica serving the API follows that subject ([`follow`]) and serves the same
//! values on `GET /metrics`.

use std::time::Duration;

use bus::{Bus, ConsumerLag, JobCounts, PlatformGauges, VmCount};
use futures::StreamExt;
use store::{sqlx, PgPool};
use telemetry::metrics::{ConsumerLabels, JobLabels, VmLabels};
use time::OffsetDateTime;
use tokio_util::sync::CancellationToken;

/// How often the gauges are published.
pub const GAUGES_EVERY: Duration = Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
pub enum GaugesError {
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    #[error("could not read consumer {0}: {1}")]
    Consumer(String, String),
    #[error("could not publish the gauges: {0}")]
    Publish(String),
}

pub struct Gauges {
    pub pool: PgPool,
    pub bus: Bus,
}

impl Gauges {
    pub async fn run(self, cancel: CancellationToken) {
        store::lease::every(&self.pool, "gauges", &cancel, GAUGES_EVERY, || async {
            let gauges = self.measure().await?;
            let payload = serde_json::to_vec(&gauges).expect("the gauges are plain data");
            self.bus
                .client
                .publish(self.bus.subjects.gauges(), payload.into())
                .await
                .map_err(|e| GaugesError::Publish(e.to_string()))?;
            Ok::<usize, GaugesError>(1)
        })
        .await;
    }

    /// The gauges now.
    #[tracing::instrument(skip_all, err)]
    pub async fn measure(&self) -> Result<PlatformGauges, GaugesError> {
        let vms: Vec<(String, String, i64)> = sqlx::query_as(
            "SELECT status, provider, count(*) FROM vm_views WHERE NOT archived
             GROUP BY status, provider ORDER BY status, provider",
        )
        .fetch_all(&self.pool)
        .await?;
        // Only VMs not destroyed can have a job queued or running.
        let (running, queued, oldest): (i64, i64, Option<f64>) = sqlx::query_as(
            "SELECT count(*) FILTER (WHERE j->>'state' = 'running'),
                    count(*) FILTER (WHERE j->>'state' = 'queued'),
                    extract(epoch FROM now() - min(coalesce(j->>'started_at', j->>'queued_at')
                        ::timestamptz) FILTER (WHERE j->>'state' = 'running'))::float8
             FROM vm_views, jsonb_array_elements(state->'jobs') AS j
             WHERE status <> 'destroyed' AND j->>'state' IN ('running', 'queued')",
        )
        .fetch_one(&self.pool)
        .await?;
        let mut consumers = vec![];
        for (stream, name) in bus::durable_consumers() {
            let failed = |e: String| GaugesError::Consumer(name.clone(), e);
            let mut consumer = bus::consumer(&self.bus, &stream, &name)
                .await
                .map_err(|e| failed(e.to_string()))?;
            let info = consumer.info().await.map_err(|e| failed(e.to_string()))?;
            consumers.push(ConsumerLag {
                stream: self.bus.subjects.stream(&stream),
                consumer: name.clone(),
                lag: info.num_pending + info.num_ack_pending as u64,
            });
        }
        Ok(PlatformGauges {
            version: 1,
            at: OffsetDateTime::now_utc(),
            vms: vms
                .into_iter()
                .map(|(status, provider, count)| VmCount {
                    status,
                    provider,
                    count,
                })
                .collect(),
            jobs: JobCounts { running, queued },
            oldest_running_job_secs: oldest.map(|s| s.max(0.0)),
            consumers,
        })
    }
}

/// Sets this process's gauges (`GET /metrics`) from every message on
/// `<prefix>.gauges.platform`, until cancelled.
pub async fn follow(bus: Bus, cancel: CancellationToken) {
    let mut subscription = loop {
        match bus.client.subscribe(bus.subjects.gauges()).await {
            Ok(subscription) => break subscription,
            Err(e) => tracing::warn!(error = %e, "could not follow the gauges; trying again"),
        }
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = tokio::time::sleep(Duration::from_secs(2)) => {}
        }
    };
    let mut last: Option<PlatformGauges> = None;
    loop {
        let message = tokio::select! {
            _ = cancel.cancelled() => return,
            message = subscription.next() => message,
        };
        let Some(message) = message else { return };
        match serde_json::from_slice::<PlatformGauges>(&message.payload) {
            Ok(gauges) => {
                set(&gauges, last.as_ref());
                last = Some(gauges);
            }
            Err(e) => tracing::warn!(error = %e, "a gauges message that does not parse"),
        }
    }
}

fn vm_labels(vm: &VmCount) -> VmLabels {
    VmLabels {
        status: vm.status.clone(),
        provider: vm.provider.clone(),
    }
}

fn consumer_labels(lag: &ConsumerLag) -> ConsumerLabels {
    ConsumerLabels {
        stream: lag.stream.clone(),
        consumer: lag.consumer.clone(),
    }
}

/// Sets the process's gauges to `gauges`: a status or consumer that `last` named and
/// `gauges` does not is dropped rather than left at its last value.
pub fn set(gauges: &PlatformGauges, last: Option<&PlatformGauges>) {
    let metrics = telemetry::metrics();
    for gone in last.iter().flat_map(|l| &l.vms) {
        let labels = vm_labels(gone);
        if !gauges.vms.iter().any(|vm| vm_labels(vm) == labels) {
            metrics.vms.remove(&labels);
        }
    }
    for vm in &gauges.vms {
        metrics.vms.get_or_create(&vm_labels(vm)).set(vm.count);
    }
    for (state, count) in [
        ("running", gauges.jobs.running),
        ("queued", gauges.jobs.queued),
    ] {
        let labels = JobLabels {
            state: state.to_owned(),
        };
        metrics.jobs.get_or_create(&labels).set(count);
    }
    for gone in last.iter().flat_map(|l| &l.consumers) {
        let labels = consumer_labels(gone);
        if !gauges
            .consumers
            .iter()
            .any(|c| consumer_labels(c) == labels)
        {
            metrics.consumer_lag.remove(&labels);
        }
    }
    for lag in &gauges.consumers {
        let value = i64::try_from(lag.lag).unwrap_or(i64::MAX);
        metrics
            .consumer_lag
            .get_or_create(&consumer_labels(lag))
            .set(value);
    }
    metrics
        .oldest_running_job
        .set(gauges.oldest_running_job_secs.unwrap_or(0.0));
    metrics.gauges_published_at.set(gauges.at.unix_timestamp());
}
