//! Cancelling a VM's jobs.

use domain::provisioning::{JobAction, JobId, ProvisioningCommand, VmId};
use time::OffsetDateTime;

use super::{VmAfter, VmKey};
use crate::{App, Caller, Error, Outcome, Principal};

impl App {
    /// Cancels a job: a queued one at once, a running one's Terraform is interrupted. A
    /// user cancels only the destroys they asked for.
    #[tracing::instrument(skip_all, fields(vm_id = %vm, job = %job))]
    pub async fn cancel_job(
        &self,
        caller: &Caller,
        vm: VmId,
        job: JobId,
        key: VmKey<'_>,
    ) -> Result<Outcome<VmAfter>, Error> {
        // Another user's VM is not found, before anything about its jobs is said.
        self.visible(&caller.principal, vm).await?;
        self.may_cancel(&caller.principal, vm, job).await?;
        let command = ProvisioningCommand::CancelJob {
            job_id: job,
            reason: format!("cancelled by {}", caller.principal.actor()),
            at: OffsetDateTime::now_utc(),
            deadline: false,
        };
        self.command_vm(caller, vm, command, key).await
    }

    /// Ends a running job whose cancel did not stop it, once the cool-off passed: the job
    /// ends cancelled and the watchdog kills its runner.
    #[tracing::instrument(skip_all, fields(vm_id = %vm, job = %job))]
    pub async fn force_cancel_job(
        &self,
        caller: &Caller,
        vm: VmId,
        job: JobId,
        key: VmKey<'_>,
    ) -> Result<Outcome<VmAfter>, Error> {
        // Another user's VM is not found, before anything about its jobs is said.
        self.visible(&caller.principal, vm).await?;
        self.may_cancel(&caller.principal, vm, job).await?;
        let command = ProvisioningCommand::ForceCancelJob {
            job_id: job,
            at: OffsetDateTime::now_utc(),
            cool_off: self.job_limits.cancel_cooloff,
        };
        let done = self.command_vm(caller, vm, command, key).await?;
        // The job has ended: the watchdog kills its runner (on whichever replica holds it).
        if let Err(e) = store::liveness::request_stop(&self.pool, vm, job).await {
            tracing::warn!(error = %e, "could not ask for the runner to be stopped; the runner stops itself once it hears the job ended");
        }
        Ok(done)
    }

    /// Whether the caller may cancel job `job` of VM `vm`: admins any; a user not a destroy
    /// another asked for, so that an expiry, an admin's destroy or the watchdog's is not
    /// undone by the VM's owner. What is not found is left for the command to answer.
    async fn may_cancel(&self, principal: &Principal, vm: VmId, job: JobId) -> Result<(), Error> {
        if principal.is_admin() {
            return Ok(());
        }
        let Some(view) = store::views::view(&self.pool, vm).await? else {
            return Ok(());
        };
        let Some(record) = view.job(job) else {
            return Ok(());
        };
        let caller = principal.actor().to_string();
        let asked_by = record.requested_by.as_deref().unwrap_or("the platform");
        if record.action == JobAction::Destroy && asked_by != caller {
            return Err(Error::forbidden(format!(
                "job {job} is a destroy asked by {asked_by}: only an admin may cancel it"
            )));
        }
        Ok(())
    }
}
