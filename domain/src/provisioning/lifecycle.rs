//! The state machine of a VM, shared by the aggregate (which decides) and the read model
//! (which shows), so both always agree on the status.

use serde::{Deserialize, Serialize};

use super::events::{JobAction, ProvisioningEvent};
use super::values::JobId;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VmStatus {
    /// No `Requested` event yet: the VM does not exist.
    #[default]
    Unknown,
    Requested,
    Provisioning,
    Provisioned,
    Failed,
    DestroyRequested,
    Destroying,
    Destroyed,
}

impl VmStatus {
    pub fn as_str(&self) -> &'static str {
        match self {
            VmStatus::Unknown => "unknown",
            VmStatus::Requested => "requested",
            VmStatus::Provisioning => "provisioning",
            VmStatus::Provisioned => "provisioned",
            VmStatus::Failed => "failed",
            VmStatus::DestroyRequested => "destroy_requested",
            VmStatus::Destroying => "destroying",
            VmStatus::Destroyed => "destroyed",
        }
    }
}

/// The job a VM is waiting for: queued, or started by a runner.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActiveJob {
    pub id: JobId,
    pub action: JobAction,
    pub started: bool,
    /// A dispatcher claimed it (`JobDispatched`): until then the job waits in the queue.
    #[serde(default)]
    pub dispatched: bool,
    /// The highest log line number recorded, so redelivered lines are dropped.
    pub last_line: u32,
}

/// Where a VM is in its life. `apply` is total and idempotent for the same event, so it can
/// fold any stored history, snapshots included.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Lifecycle {
    pub status: VmStatus,
    pub active_job: Option<ActiveJob>,
    /// The last job number handed out, so the next one is unique.
    pub last_job: Option<JobId>,
    /// A destroy was asked for while another job was active; it is queued when that ends.
    pub destroy_pending: bool,
    pub ip: Option<String>,
    pub last_error: Option<String>,
}

impl Lifecycle {
    pub fn apply(&mut self, event: &ProvisioningEvent) {
        match event {
            ProvisioningEvent::Requested { .. } => self.status = VmStatus::Requested,
            ProvisioningEvent::JobQueued { job_id, action, .. } => {
                self.active_job = Some(ActiveJob {
                    id: *job_id,
                    action: *action,
                    started: false,
                    dispatched: false,
                    last_line: 0,
                });
                self.last_job = Some(*job_id);
                if *action == JobAction::Destroy {
                    self.destroy_pending = false;
                    self.status = VmStatus::DestroyRequested;
                }
            }
            ProvisioningEvent::JobDispatched { job_id, .. } => {
                if let Some(job) = self.active_job.as_mut().filter(|j| j.id == *job_id) {
                    job.dispatched = true;
                }
            }
            ProvisioningEvent::JobStarted { job_id, .. } => {
                if let Some(job) = self.active_job.as_mut().filter(|j| j.id == *job_id) {
                    job.started = true;
                    self.status = match (job.action, self.destroy_pending) {
                        (JobAction::Destroy, _) => VmStatus::Destroying,
                        (JobAction::Apply, false) => VmStatus::Provisioning,
                        (JobAction::Apply, true) => VmStatus::DestroyRequested,
                    };
                }
            }
            ProvisioningEvent::LogLine { job_id, line, .. } => {
                if let Some(job) = self.active_job.as_mut().filter(|j| j.id == *job_id) {
                    job.last_line = job.last_line.max(*line);
                }
            }
            ProvisioningEvent::Applied { vm_ip, .. } => {
                self.active_job = None;
                self.ip = Some(vm_ip.clone());
                self.last_error = None;
                self.status = self.after_job(VmStatus::Provisioned);
            }
            ProvisioningEvent::Failed { reason, .. } => {
                self.active_job = None;
                self.last_error = Some(reason.clone());
                self.status = self.after_job(VmStatus::Failed);
            }
            ProvisioningEvent::DestroyRequested => {
                self.destroy_pending = true;
                self.status = VmStatus::DestroyRequested;
            }
            ProvisioningEvent::Destroyed { .. } => {
                self.active_job = None;
                self.ip = None;
                self.last_error = None;
                self.status = VmStatus::Destroyed;
            }
        }
    }

    fn after_job(&self, status: VmStatus) -> VmStatus {
        if self.destroy_pending {
            VmStatus::DestroyRequested
        } else {
            status
        }
    }

    pub fn next_job_id(&self) -> JobId {
        self.last_job.map_or(JobId::FIRST, |j| j.next())
    }
}
