//! The watchdog: a job whose runner has said nothing for a long time (it died with its
//! host, its Kubernetes pod never started, its messages cannot reach NATS, the daemon died
//! between claiming the job and starting its runner) is failed, so its VM does not wait for
//! ever and can be destroyed, and its runner is stopped, so it changes nothing later.
//! A claimed job whose runner never started and is gone (the dispatcher died before
//! starting it, or the runner before its first message) is queued again instead, so it
//! runs once on another claim.
//! Silence is judged from the runner's own messages (a heartbeat every few seconds, every
//! line, the result), recorded per job by the ingester in `job_liveness`; never from the
//! read model, which a stalled projector would leave behind.
//!
//! It also enforces the job deadlines: a job past its action's deadline (counted from its
//! claim) is cancelled, and forced off once the cool-off after that cancel has passed; and
//! it kills the runners of force-cancelled jobs. Runs once, under a lease.

use std::sync::Arc;
use std::time::Duration;

use dispatcher::Executor;
use domain::provisioning::{
    JobId, JobLimits, Provisioning, ProvisioningCommand, ProvisioningError, VmId,
};
use store::lease;
use store::liveness::{DueJob, SilentJob};
use store::{Actor, Metadata, PgPool};
use tokio_util::sync::CancellationToken;

pub struct Watchdog {
    pub pool: PgPool,
    /// How long a job may stay silent.
    pub silence: Duration,
    /// What stops the runner of a job the watchdog failed.
    pub executor: Arc<dyn Executor>,
    /// The deadlines and the cancel cool-off.
    pub limits: JobLimits,
}

/// How often the watchdog looks, at most: a deadline or a force-cancel is acted on within
/// about this long.
const MAX_EVERY: Duration = Duration::from_secs(1);

impl Watchdog {
    pub async fn run(self, cancel: CancellationToken) {
        let every = (self.silence / 4).clamp(Duration::from_millis(100), MAX_EVERY);
        lease::every(&self.pool, "watchdog", &cancel, every, || self.sweep()).await;
    }

    /// Fails every silent job and stops its runner; returns how many were failed.
    #[tracing::instrument(skip_all, err)]
    pub async fn sweep(&self) -> Result<usize, store::StoreError> {
        let mut failed = 0;
        for silent in store::liveness::silent(&self.pool, self.silence).await? {
            if self.judge(&silent).await? {
                failed += 1;
            }
            store::liveness::forget(&self.pool, silent.vm, silent.job).await?;
        }
        for due in store::liveness::due(&self.pool, &self.limits).await? {
            self.enforce(&due).await?;
        }
        Ok(failed)
    }

    /// Cancels a job past its deadline, forces it off after the cool-off, and kills the
    /// runner of a job that ended forced.
    async fn enforce(&self, due: &DueJob) -> Result<(), store::StoreError> {
        let DueJob { vm, job, .. } = due;
        let (state, _) = store::load::<Provisioning>(&self.pool, &vm.to_string()).await?;
        let lifecycle = state.lifecycle();
        let Some(active) = lifecycle.active_job.filter(|j| j.id == *job) else {
            // Over: killed if it was forced off (its runner may run on), else a leftover.
            if due.stop_requested || lifecycle.ended_job(*job).is_some_and(|e| e.forced) {
                self.stop(due).await;
            }
            store::liveness::forget(&self.pool, *vm, *job).await?;
            return Ok(());
        };
        let now = time::OffsetDateTime::now_utc();
        let command = match lifecycle.cancel {
            None => {
                let deadline = self.limits.deadline(active.action).as_secs();
                ProvisioningCommand::CancelJob {
                    job_id: *job,
                    reason: format!(
                        "the {} job ran past its deadline of {deadline} s",
                        active.action.as_str()
                    ),
                    at: now,
                    deadline: true,
                }
            }
            Some(_) => ProvisioningCommand::ForceCancelJob {
                job_id: *job,
                at: now,
                cool_off: self.limits.cancel_cooloff,
            },
        };
        let forcing = matches!(command, ProvisioningCommand::ForceCancelJob { .. });
        let metadata = Metadata::new(Actor::Watchdog, format!("{vm}/job/{job}"));
        match store::execute::<Provisioning>(&self.pool, vm, command, &metadata).await {
            Ok(_) if forcing => {
                tracing::warn!(%vm, %job, "a job that did not stop after its cancel was forced off");
                self.stop(due).await;
                store::liveness::forget(&self.pool, *vm, *job).await?;
            }
            Ok(_) => tracing::warn!(%vm, %job, "a job ran past its deadline: cancelled"),
            // Still in its cool-off, or it moved on meanwhile: next time.
            Err(store::CommandError::Rejected(
                ProvisioningError::CoolingOff { .. } | ProvisioningError::JobNotActive(_),
            )) => {}
            Err(e) => tracing::warn!(%vm, %job, error = %e, "could not enforce the job's deadline"),
        }
        Ok(())
    }

    async fn stop(&self, due: &DueJob) {
        self.stop_runner(due.vm, due.job, due.runner.as_deref())
            .await;
    }

    /// Stops the job's recorded runner; an error is logged, a runner never recorded said.
    async fn stop_runner(&self, vm: VmId, job: JobId, runner: Option<&str>) {
        match runner {
            Some(runner) => {
                if let Err(e) = self.executor.stop(runner).await {
                    tracing::error!(%vm, %job, %runner, error = %e, "could not stop the runner");
                }
            }
            None => {
                tracing::warn!(%vm, %job, "the job's runner was never recorded: nothing to stop")
            }
        }
    }

    /// Fails the job if it still runs; whether it did.
    async fn judge(&self, silent: &SilentJob) -> Result<bool, store::StoreError> {
        let SilentJob { vm, job, runner } = silent;
        let (state, _) = store::load::<Provisioning>(&self.pool, &vm.to_string()).await?;
        match state.lifecycle().active_job.filter(|j| j.id == *job) {
            // It ended: the row is left over from a late message.
            None => return Ok(false),
            // Waiting for a runner slot again (its claim never happened): the dispatcher
            // records it anew when it claims the job.
            Some(active) if !active.dispatched && !active.started => return Ok(false),
            // Claimed, and its runner never said a word (not even that it started) and is
            // gone, or was never started: the dispatcher died before starting it, or the
            // runner before its first message. Queued again, it runs on another claim, once.
            // A runner still there (a pod pending on its image, a hung process) fails the
            // job as lost instead, so a broken runner is not started again and again.
            Some(active) if !active.started && !self.may_run(runner.as_deref()).await => {
                tracing::warn!(%vm, %job, "a claimed job never started: queueing it again");
                let command = ProvisioningCommand::RequeueJob { job_id: *job };
                let metadata = Metadata::new(Actor::Watchdog, format!("{vm}/job/{job}"));
                if let Err(e) =
                    store::execute::<Provisioning>(&self.pool, vm, command, &metadata).await
                {
                    tracing::info!(%vm, %job, error = %e, "the claimed job was not queued again");
                }
                return Ok(false);
            }
            Some(_) => {}
        }
        self.fail_lost(silent).await
    }

    /// Whether `runner` (if one was recorded) may still run; when the executor cannot tell,
    /// it may.
    async fn may_run(&self, runner: Option<&str>) -> bool {
        let Some(runner) = runner else {
            return false;
        };
        match self.executor.is_running(runner).await {
            Ok(running) => running,
            Err(e) => {
                tracing::warn!(%runner, error = %e, "could not tell whether the runner runs");
                true
            }
        }
    }

    /// Fails a silent job as lost and stops its runner; whether it did.
    async fn fail_lost(&self, silent: &SilentJob) -> Result<bool, store::StoreError> {
        let SilentJob { vm, job, runner } = silent;
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
        if let Err(e) = store::execute::<Provisioning>(&self.pool, vm, command, &metadata).await {
            // The job moved on meanwhile (its result arrived): nothing to do.
            tracing::info!(%vm, %job, error = %e, "the silent job was not failed");
            return Ok(false);
        }
        self.stop_runner(*vm, *job, runner.as_deref()).await;
        Ok(true)
    }
}
