//! The drift check (`PROVISIONING_DRIFT_INTERVAL`, off by default): queues a refresh job,
//! through the same job control as a user's refresh, for each running VM in turn, so that
//! a VM moved or changed outside Terraform shows it (`IpChanged`, `DriftDetected`) without
//! anyone asking. A pass runs every tenth of the interval and queues at most `batch`
//! refreshes, of the VMs not checked within the interval, the longest unchecked first: a
//! large fleet is spread over the interval instead of refreshed all at once. A VM with a
//! job to come is skipped until it has none. Runs once in the whole deployment, under a
//! lease. It acts as the watchdog actor (`Actor::Watchdog`), the platform's own.

use std::time::Duration;

use domain::provisioning::{Provisioning, ProvisioningCommand};
use store::lease;
use store::{Actor, CommandError, Metadata, PgPool, StoreError};
use tokio_util::sync::CancellationToken;

/// How the drift check runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DriftCheckConfig {
    /// How often each running VM is refreshed, about (`PROVISIONING_DRIFT_INTERVAL`).
    pub interval: Duration,
    /// The most refreshes one pass queues (`PROVISIONING_DRIFT_BATCH`).
    pub batch: usize,
}

/// Refreshes one pass queues unless `PROVISIONING_DRIFT_BATCH` says otherwise.
pub const DEFAULT_DRIFT_BATCH: usize = 10;

pub struct DriftCheck {
    pub pool: PgPool,
    pub config: DriftCheckConfig,
}

impl DriftCheck {
    pub async fn run(self, cancel: CancellationToken) {
        let every = pass_every(self.config.interval);
        lease::every(&self.pool, "drift-check", &cancel, every, || self.pass()).await;
    }

    /// Queues a refresh of each VM due, at most a batch; returns how many were queued.
    #[tracing::instrument(skip_all, err)]
    pub async fn pass(&self) -> Result<usize, StoreError> {
        let limit = i64::try_from(self.config.batch).unwrap_or(i64::MAX);
        let due = store::drift::due(&self.pool, self.config.interval, limit).await?;
        let mut queued = 0;
        for vm in due {
            let metadata = Metadata::new(Actor::Watchdog, format!("{vm}/drift-check"));
            let command = ProvisioningCommand::Refresh;
            match store::execute::<Provisioning>(&self.pool, vm, command, &metadata).await {
                Ok(committed) if !committed.events.is_empty() => queued += 1,
                Ok(_) => {} // a refresh was waiting already
                // Destroyed, or asked to be, since the read model said otherwise.
                Err(CommandError::Rejected(e)) => {
                    tracing::info!(%vm, error = %e, "the drift check did not refresh the VM")
                }
                Err(e) => {
                    tracing::warn!(%vm, error = %e, "could not queue the drift check's refresh")
                }
            }
            store::drift::checked(&self.pool, vm).await?;
        }
        if queued > 0 {
            tracing::info!(queued, "the drift check queued refreshes");
        }
        Ok(queued)
    }
}

/// How often a pass runs: a tenth of the interval, between 100 ms and a minute.
fn pass_every(interval: Duration) -> Duration {
    (interval / 10).clamp(Duration::from_millis(100), Duration::from_secs(60))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passes_run_every_tenth_of_the_interval_within_bounds() {
        let every = |secs| pass_every(Duration::from_secs(secs));
        assert_eq!(every(3600), Duration::from_secs(60));
        assert_eq!(every(300), Duration::from_secs(30));
        assert_eq!(every(1), Duration::from_millis(100));
    }
}
