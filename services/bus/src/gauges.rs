//! The platform gauges, published every 10 s on `<prefix>.gauges.platform` (see
//! `nats/subjects.md`).

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

/// A snapshot of the platform, computed by the one replica holding the gauges lease.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlatformGauges {
    /// 1 for this shape.
    pub version: u32,
    /// When it was computed; RFC 3339 on the wire.
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
    /// VMs (not archived) by status and provider; a pair with none is left out.
    pub vms: Vec<VmCount>,
    /// Terraform jobs running (claimed by a dispatcher) and queued (waiting for one).
    pub jobs: JobCounts,
    /// Age of the oldest running job in seconds; `null` when none runs.
    pub oldest_running_job_secs: Option<f64>,
    /// Each durable consumer's messages not yet delivered (`num_pending`) plus those
    /// delivered and not yet acknowledged (`num_ack_pending`).
    pub consumers: Vec<ConsumerLag>,
}

impl PlatformGauges {
    /// The gauges of counts read now: `vms` as `(status, provider, count)`, `jobs` as
    /// `(running, queued, oldest running job's age in seconds)`.
    pub fn now(
        vms: Vec<(String, String, i64)>,
        jobs: (i64, i64, Option<f64>),
        consumers: Vec<ConsumerLag>,
    ) -> Self {
        let (running, queued, oldest) = jobs;
        PlatformGauges {
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
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VmCount {
    pub status: String,
    pub provider: String,
    pub count: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobCounts {
    pub running: i64,
    pub queued: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsumerLag {
    /// The stream's name, e.g. `PROVISIONING_JOBS`.
    pub stream: String,
    pub consumer: String,
    pub lag: u64,
}

/// A durable consumer whose lag could not be read: its name, and why.
#[derive(Debug, thiserror::Error)]
#[error("could not read consumer {consumer}: {reason}")]
pub struct LagUnread {
    pub consumer: String,
    pub reason: String,
}

/// Each durable consumer's lag now, read from JetStream.
pub async fn consumer_lags(bus: &crate::Bus) -> Result<Vec<ConsumerLag>, LagUnread> {
    let mut lags = vec![];
    for (stream, name) in crate::durable_consumers() {
        let failed = |reason: String| LagUnread {
            consumer: name.clone(),
            reason,
        };
        let mut consumer = crate::consumer(bus, &stream, &name)
            .await
            .map_err(|e| failed(e.to_string()))?;
        let info = consumer.info().await.map_err(|e| failed(e.to_string()))?;
        lags.push(ConsumerLag {
            stream: bus.subjects.stream(&stream),
            consumer: name.clone(),
            lag: info.num_pending + info.num_ack_pending as u64,
        });
    }
    Ok(lags)
}
