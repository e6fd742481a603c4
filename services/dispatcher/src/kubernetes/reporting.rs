//! What the watcher and the reconciler need from outside Kubernetes, as narrow traits: where
//! a failure is reported and which jobs the store says are running. The daemon gives them
//! the bus and Postgres; the tests give them a recorder and a list.

use domain::provisioning::{JobId, VmId};
use store::liveness::RunnerJob;

/// Where a job whose runner could not report is recorded as failed.
#[async_trait::async_trait]
pub trait JobFailures: Send + Sync {
    async fn failed(&self, vm: VmId, job: JobId, reason: String);
}

/// The jobs running on runners whose name starts with a prefix.
#[async_trait::async_trait]
pub trait RunningJobs: Send + Sync {
    async fn with_runner_prefix(&self, prefix: &str) -> Result<Vec<RunnerJob>, String>;
}

/// Reports over the bus, as the runner would have: the ingester records a `Failed` event,
/// and the VM refuses a second result for a job that has one.
pub struct BusFailures(pub bus::Bus, pub bus::RunnerKeys);

#[async_trait::async_trait]
impl JobFailures for BusFailures {
    #[tracing::instrument(skip_all, fields(vm_id = %vm, job_id = %job))]
    async fn failed(&self, vm: VmId, job: JobId, reason: String) {
        tracing::warn!(%reason, "reporting the job as failed");
        // Lost here, the failure is still found: the reconciler reports a vanished Job, and
        // the watchdog a job gone silent.
        if let Err(e) = crate::report_failure(&self.0, &self.1, vm, job, reason).await {
            tracing::error!(error = %e, "could not report the job as failed");
        }
    }
}

/// The store's `job_liveness` rows.
pub struct StoreRunningJobs(pub store::PgPool);

#[async_trait::async_trait]
impl RunningJobs for StoreRunningJobs {
    async fn with_runner_prefix(&self, prefix: &str) -> Result<Vec<RunnerJob>, String> {
        store::liveness::with_runner_prefix(&self.0, prefix)
            .await
            .map_err(|e| e.to_string())
    }
}
