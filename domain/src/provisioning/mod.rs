//! One `Provisioning` aggregate per VM: the request, the Terraform jobs run for it and
//! their outcome.

mod aggregate;
mod commands;
mod error;
mod events;
mod jobs;
mod lifecycle;
pub mod limits;
mod values;
mod views;

pub use aggregate::Provisioning;
pub use commands::{JobOutcome, LogLineIn, ProvisioningCommand};
pub use error::ProvisioningError;
pub use events::{Diagnostic, DriftedResource, JobAction, ProvisioningEvent, Severity};
pub use jobs::{CancelRequest, EndedJob, JobLimits, JobState, WaitingJob};
pub use lifecycle::{ActiveJob, Lifecycle, VmStatus};
pub use values::{
    Cidr, DurationHours, JobId, ProviderId, SshPublicKey, TemplateId, ValueError, VmId, VmName,
    VmSpec,
};
pub use views::{DriftReport, JobRecord, Stamp, VmView};
