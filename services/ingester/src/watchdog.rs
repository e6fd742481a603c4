//! The watchdog: a job whose runner has said nothing for a long time (it died with its
//! host, its Kubernetes pod never started, its messages cannot reach NATS) is failed, so
//! its VM does not wait for ever and can be destroyed. Terraform prints a progress line
//! every few seconds while it works, so silence means the runner is gone. Runs once, under
//! a lease.

use std::time::Duration;

use domain::provisioning::{Provisioning, ProvisioningCommand};
use store::lease;
use store::{Actor, Metadata, PgPool};
use tokio_util::sync::CancellationToken;

pub struct Watchdog {
    pub pool: PgPool,
    /// How long a job may stay silent.
    pub silence: Duration,
}

impl Watchdog {
    pub async fn run(self, cancel: CancellationToken) {
        let every = (self.silence / 4).clamp(Duration::from_millis(100), Duration::from_secs(30));
        lease::every(&self.pool, "watchdog", &cancel, every, || self.sweep()).await;
    }

    /// Fails every silent job; returns how many.
    #[tracing::instrument(skip_all, err)]
    pub async fn sweep(&self) -> Result<usize, store::sqlx::Error> {
        let silent = store::views::silent_jobs(&self.pool, self.silence).await?;
        for (vm, job) in &silent {
            let reason = format!(
                "no word from the job's runner for {} s: it is presumed lost",
                self.silence.as_secs()
            );
            tracing::warn!(%vm, %job, %reason, "failing a silent job");
            let command = ProvisioningCommand::FinishJob {
                job_id: *job,
                outcome: bus::lost_job(reason),
            };
            let metadata = Metadata::new(Actor::Watchdog, format!("{vm}/job/{job}"));
            if let Err(e) = store::execute::<Provisioning>(&self.pool, vm, command, &metadata).await
            {
                // The job moved on meanwhile (its result arrived): nothing to do.
                tracing::info!(%vm, %job, error = %e, "the silent job was not failed");
            }
        }
        Ok(silent.len())
    }
}
