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
