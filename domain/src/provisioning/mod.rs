//! One `Provisioning` aggregate per VM: the request, the Terraform jobs run for it and
//! their outcome.

mod aggregate;
mod boot;
mod commands;
mod error;
mod events;
pub mod expiry;
mod jobs;
mod lifecycle;
pub mod limits;
mod names;
mod progress;
mod values;
mod views;

pub use aggregate::Provisioning;
pub use boot::{AppStatus, Boot, BootReport, CallbackKind, TaskservReport};
pub use commands::{JobOutcome, LogLineIn, ProvisioningCommand};
pub use error::ProvisioningError;
pub use events::{Diagnostic, DriftedResource, JobAction, ProvisioningEvent, Severity};
pub use expiry::{Expiry, ExtendLimit};
pub use jobs::{CancelRequest, EndedJob, JobLimits, JobState, WaitingJob};
pub use lifecycle::{ActiveJob, Lifecycle, VmStatus};
pub use names::{HostName, VmName, MAX_NAME_LEN};
pub use progress::{TaskservEntry, MAX_LAST_LINES};
pub use values::{
    Cidr, DurationHours, JobId, ProviderId, SshKeyName, SshPublicKey, TemplateId, ValueError, VmId,
    VmSpec, MAX_SSH_KEY_LEN, MIN_RSA_BITS,
};
pub use views::{DriftReport, JobRecord, Stamp, VmView};
