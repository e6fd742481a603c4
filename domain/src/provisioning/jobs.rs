//! The jobs of a VM: Terraform runs, one at a time, the rest waiting in order behind it.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use super::events::JobAction;
use super::values::JobId;

/// Where a job is, as users see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobState {
    /// Waiting: behind the VM's running job, or for a free runner.
    Queued,
    /// A dispatcher claimed it; its runner starts or runs.
    Running,
    Succeeded,
    Failed,
    Cancelled,
}

impl JobState {
    pub fn as_str(&self) -> &'static str {
        match self {
            JobState::Queued => "queued",
            JobState::Running => "running",
            JobState::Succeeded => "succeeded",
            JobState::Failed => "failed",
            JobState::Cancelled => "cancelled",
        }
    }

    pub fn is_finished(&self) -> bool {
        matches!(
            self,
            JobState::Succeeded | JobState::Failed | JobState::Cancelled
        )
    }
}

/// A cancel asked of a running job: its runner interrupts Terraform, which stops cleanly.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CancelRequest {
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
    pub reason: String,
    /// Asked because the job ran past its deadline: it then ends `failed`, not `cancelled`.
    pub deadline: bool,
}

/// A job waiting behind the VM's active one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct WaitingJob {
    pub id: JobId,
    pub action: JobAction,
}

/// How a job that is over ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct EndedJob {
    pub id: JobId,
    pub action: JobAction,
    pub state: JobState,
    /// Ended by a force-cancel: its runner is to be killed, not waited for.
    pub forced: bool,
}

/// How long each action may run, and the cool-off between a cancel and a force-cancel:
/// `PROVISIONING_DEADLINE_CREATE`, `_DESTROY`, `_REFRESH` and `PROVISIONING_CANCEL_COOLOFF`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobLimits {
    pub create: Duration,
    pub destroy: Duration,
    pub refresh: Duration,
    pub cancel_cooloff: Duration,
}

impl Default for JobLimits {
    fn default() -> Self {
        Self {
            create: Duration::from_secs(3600),
            destroy: Duration::from_secs(3600),
            refresh: Duration::from_secs(900),
            cancel_cooloff: Duration::from_secs(10),
        }
    }
}

impl JobLimits {
    /// The deadline of a job of `action`, counted from its claim by a dispatcher.
    pub fn deadline(&self, action: JobAction) -> Duration {
        match action {
            JobAction::Create => self.create,
            JobAction::Destroy => self.destroy,
            JobAction::Refresh => self.refresh,
            // Installs run scripts on the VM, as long as a create may take.
            JobAction::Install => self.create,
        }
    }
}
