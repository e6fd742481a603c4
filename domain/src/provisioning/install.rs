//! Installs on a running VM: the plan recorded and its job queued; the runner's reports of
//! each step. (A part of the aggregate, apart for size.)

use super::Provisioning;
use crate::provisioning::boot::TaskservReport;
use crate::provisioning::error::ProvisioningError;
use crate::provisioning::events::{JobAction, ProvisioningEvent};
use crate::provisioning::lifecycle::VmStatus;
use crate::provisioning::values::JobId;
use crate::taskservs::PlannedTaskserv;

impl Provisioning {
    /// Taskservs for the running VM: the plan recorded, and its install job queued now or
    /// behind the active one.
    pub(super) fn install(
        &self,
        taskservs: Vec<PlannedTaskserv>,
    ) -> Result<Vec<ProvisioningEvent>, ProvisioningError> {
        let lifecycle = &self.lifecycle;
        self.existing()?;
        if lifecycle.status != VmStatus::Running || lifecycle.destroy_to_come() {
            return Err(ProvisioningError::CannotInstall(lifecycle.status));
        }
        let job_id = lifecycle.next_job_id();
        let job = match lifecycle.active_job {
            Some(_) => ProvisioningEvent::JobRequested {
                job_id,
                action: JobAction::Install,
            },
            None => {
                let mut spec = self.spec.clone().ok_or(ProvisioningError::NotFound)?;
                spec.taskservs = taskservs.clone();
                ProvisioningEvent::JobQueued {
                    job_id,
                    action: JobAction::Install,
                    spec,
                }
            }
        };
        Ok(vec![
            ProvisioningEvent::TaskservsRequested { job_id, taskservs },
            job,
        ])
    }

    pub(super) fn report_taskserv(
        &self,
        job_id: JobId,
        step: u8,
        report: TaskservReport,
    ) -> Result<Vec<ProvisioningEvent>, ProvisioningError> {
        let job = self.active_job(job_id)?;
        if job.action != JobAction::Install {
            return Err(ProvisioningError::JobNotActive(job_id));
        }
        crate::provisioning::progress::runner_report(&self.lifecycle, job_id, step, report)
    }
}
