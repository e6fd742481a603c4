use super::lifecycle::VmStatus;
use super::values::JobId;

/// Why a command was refused. Each variant is a client mistake or a stale message, never
/// an infrastructure failure.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProvisioningError {
    #[error("the VM was already requested")]
    AlreadyRequested,
    #[error("the VM does not exist")]
    NotFound,
    #[error("the VM is {}; it cannot be destroyed again", .0.as_str())]
    AlreadyDestroying(VmStatus),
    #[error("job {0} is not the active job of this VM")]
    JobNotActive(JobId),
    #[error("job {0} was dispatched already")]
    JobTaken(JobId),
    #[error("job {job_id}: line {expected} is missing before line {got}")]
    LineGap {
        job_id: JobId,
        expected: u32,
        got: u32,
    },
    #[error("job {job_id}: the runner reported {reported} lines, {recorded} are recorded")]
    LinesMissing {
        job_id: JobId,
        reported: u32,
        recorded: u32,
    },
}

impl ProvisioningError {
    /// A refusal that the same message, delivered again later, may pass: lines that
    /// arrived out of order.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            ProvisioningError::LineGap { .. } | ProvisioningError::LinesMissing { .. }
        )
    }
}
