//! The platform gauges, one publisher in the whole deployment (a lease): every 10 s it
//! counts VMs by status and provider, jobs running and queued, the age of the oldest
//! running job (from the read model) and each durable consumer's lag (from JetStream), and
//! publishes them on `<prefix>.gauges.platform` (core NATS: not kept, the next comes soon).
//! Every replica serving the API follows that subject ([`follow`]) and serves the same
//! values on `GET /metrics`.

use std::time::Duration;

use bus::{Bus, ConsumerLag, PlatformGauges, VmCount};
use futures::StreamExt;
use store::{sqlx, PgPool};
use telemetry::metrics::{ConsumerLabels, JobLabels, VmLabels};
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
        let vms = store::gauges::vms(&self.pool).await?;
        let jobs = store::gauges::jobs(&self.pool).await?;
        let consumers = bus::consumer_lags(&self.bus)
            .await
            .map_err(|e| GaugesError::Consumer(e.consumer, e.reason))?;
        Ok(PlatformGauges::now(vms, jobs, consumers))
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
