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
}
