use super::jobs::JobState;
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
    #[error("the VM has no job {0}")]
    NoSuchJob(JobId),
    #[error("job {0} is {state}: it cannot be cancelled", state = .1.as_str())]
    JobFinished(JobId, JobState),
    #[error(
        "job {0} was not cancelled: cancel it first, and force-cancel it only if it does not stop"
    )]
    CancelFirst(JobId),
    #[error(
        "job {job_id} was cancelled {elapsed} s ago: it may be force-cancelled after {cool_off} s"
    )]
    CoolingOff {
        job_id: JobId,
        elapsed: u64,
        cool_off: u64,
    },
    #[error("nothing failed: a retry runs a failed create or destroy again")]
    NothingToRetry,
    #[error("the VM is {}: it cannot be refreshed", .0.as_str())]
    CannotRefresh(VmStatus),
    /// A callback token that does not fit the VM as it is: answered as an unknown URL.
    #[error("the VM is {}: taskservs install on a running VM", .0.as_str())]
    CannotInstall(VmStatus),
    #[error("callback refused: {0}")]
    CallbackRefused(String),
    #[error("the VM is {}: its expiry cannot change", .0.as_str())]
    CannotExtend(VmStatus),
    #[error("hours: must be between 1 and {longest}")]
    ExtendHours { longest: u16 },
    #[error(
        "hours: a VM may have at most {longest} hours left; it has {left} before this extension"
    )]
    ExtendTooFar { longest: u16, left: i64 },
    /// Refused as a create would be: the policies allow the caller no longer a life.
    #[error(
        "denied by policy {policy:?}: the VM would live longer than the {hours} hours allowed from its request"
    )]
    ExtendPastPolicy { policy: String, hours: u64 },
    #[error("expires_at: must be in the future")]
    ExpiryPassed,
    #[error("expires_at: must be within {days} days from now")]
    ExpiryTooFar { days: u64 },
    #[error("the VM has not expired: its expiry moved")]
    NotExpired,
    #[error("the VM is {}: only a destroyed VM can be archived; destroy it first", .0.as_str())]
    NotDestroyed(VmStatus),
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
