//! What happened to a VM. Events are facts: they are never changed, only added.

use std::collections::BTreeMap;

use cqrs_es::DomainEvent;
use serde::{Deserialize, Serialize};

use super::values::{JobId, VmSpec};
use crate::taskservs::{PlannedTaskserv, TaskservName};

/// What a Terraform job does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobAction {
    /// `terraform apply`: makes the VM. Stored as `apply` by earlier versions.
    #[serde(alias = "apply")]
    Create,
    /// `terraform destroy`.
    Destroy,
    /// `terraform plan -refresh-only` and `apply` of that plan (or `terraform refresh`):
    /// reads what the cloud has, changes nothing there, updates the state and outputs (the
    /// address), and reports what changed outside Terraform.
    Refresh,
    /// Installs taskservs on a running VM over SSH, in order; changes no cloud resource.
    Install,
}

impl JobAction {
    pub fn as_str(&self) -> &'static str {
        match self {
            JobAction::Create => "create",
            JobAction::Destroy => "destroy",
            JobAction::Refresh => "refresh",
            JobAction::Install => "install",
        }
    }

    /// Whether the job's failure leaves the VM as it was (a refresh or an install changes
    /// no cloud resource), rather than failed until a retry or a destroy.
    pub fn keeps_the_vm(&self) -> bool {
        matches!(self, JobAction::Refresh | JobAction::Install)
    }

    pub fn parse(action: &str) -> Option<Self> {
        match action {
            "create" | "apply" => Some(JobAction::Create),
            "destroy" => Some(JobAction::Destroy),
            "refresh" => Some(JobAction::Refresh),
            "install" => Some(JobAction::Install),
            _ => None,
        }
    }
}

/// How bad a Terraform diagnostic is. Stored as Terraform writes it: `error` or `warning`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
}

impl Severity {
    /// The severity of a diagnostic in Terraform's `-json` output: anything but `error`
    /// does not fail a run, so it is a warning.
    pub fn from_terraform(severity: &str) -> Severity {
        match severity {
            "error" => Severity::Error,
            _ => Severity::Warning,
        }
    }
}

/// A Terraform diagnostic, as the runner reported it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diagnostic {
    pub severity: Severity,
    pub summary: String,
    #[serde(default)]
    pub detail: String,
}

/// A resource Terraform found changed outside it, as a refresh reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DriftedResource {
    /// Terraform's address of the resource, e.g. `openstack_compute_instance_v2.vm`.
    pub address: String,
    /// What changed it: `update` (attributes differ) or `delete` (it is gone).
    pub action: String,
    /// The names of the attributes whose values changed, in order; nested ones as paths
    /// (`metadata.owner`). Empty for a deleted resource.
    #[serde(default)]
    pub attributes: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", content = "data")]
pub enum ProvisioningEvent {
    /// A user asked for a VM. `expires_at` is the request's time plus `duration_hours`
    /// (absent from events of earlier versions: the read model counts from the event's time).
    Requested {
        spec: VmSpec,
        #[serde(default, with = "time::serde::rfc3339::option")]
        expires_at: Option<time::OffsetDateTime>,
    },
    /// A job was asked for while another runs: it waits behind it, in order, until a
    /// `JobQueued` makes it the next to run.
    JobRequested { job_id: JobId, action: JobAction },
    /// A Terraform job is next to run; the relay hands it to the dispatcher.
    JobQueued {
        job_id: JobId,
        action: JobAction,
        spec: VmSpec,
    },
    /// A dispatcher took the job and starts its runner; no other dispatcher will.
    JobDispatched { job_id: JobId, dispatcher: String },
    /// The runner of a job started.
    JobStarted {
        job_id: JobId,
        action: JobAction,
        runner: String,
    },
    /// One line Terraform printed, in order within its job.
    LogLine {
        job_id: JobId,
        line: u32,
        level: String,
        kind: String,
        message: String,
    },
    /// An apply job succeeded; `outputs` holds the non-sensitive Terraform outputs.
    Applied {
        job_id: JobId,
        vm_ip: String,
        outputs: BTreeMap<String, serde_json::Value>,
    },
    /// A refresh job succeeded; `outputs` holds the non-sensitive Terraform outputs.
    Refreshed {
        job_id: JobId,
        outputs: BTreeMap<String, serde_json::Value>,
    },
    /// A refresh found the VM at another address than the one recorded. Stored as
    /// `AddressChanged` by version 1.0 (read through the store's upcaster).
    IpChanged { job_id: JobId, vm_ip: String },
    /// A refresh found resources changed outside Terraform (Terraform's `resource_drift`):
    /// which, and the names of their changed attributes (never the values, which may be
    /// secret). Follows the job's `Refreshed`; shown until the next successful create.
    DriftDetected {
        job_id: JobId,
        resources: Vec<DriftedResource>,
    },
    /// A job failed; `reason` is what a user needs to read first.
    Failed {
        job_id: JobId,
        action: JobAction,
        reason: String,
        diagnostics: Vec<Diagnostic>,
        /// Terraform's exit code; none when no Terraform ran to its end (a lost runner, a
        /// job forced off past its deadline). Absent from events of earlier versions.
        #[serde(default)]
        exit_code: Option<i32>,
        /// The job was forced off (its deadline passed, and the cool-off after the cancel):
        /// its runner is killed.
        #[serde(default)]
        forced: bool,
    },
    /// A cancel was asked of a running job: its runner interrupts Terraform.
    JobCancelRequested {
        job_id: JobId,
        reason: String,
        #[serde(with = "time::serde::rfc3339")]
        at: time::OffsetDateTime,
        /// Asked because the job ran past its deadline.
        deadline: bool,
    },
    /// A job ended cancelled: taken out of the queue, stopped by its interrupt, or forced
    /// off (`forced`: its runner is killed).
    JobCancelled {
        job_id: JobId,
        action: JobAction,
        reason: String,
        exit_code: Option<i32>,
        forced: bool,
    },
    /// A user asked to destroy the VM. The destroy job is queued now, or when the job
    /// that is running ends.
    DestroyRequested,
    /// A destroy job succeeded: nothing of the VM is left.
    Destroyed { job_id: JobId },
    /// cloud-init on the VM made by create job `job_id` started (`initializing`).
    BootStarted { job_id: JobId },
    /// cloud-init phoned home: the VM is up (`running`).
    /// `host_keys`: the SSH host keys it posted (public, OpenSSH lines), which install
    /// jobs pin; absent from events of earlier versions.
    PhonedHome {
        job_id: JobId,
        hostname: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        host_keys: Vec<String>,
    },
    /// No phone-home came within the boot timeout (`unreachable`); a later one still
    /// brings the VM to `running`.
    Unreachable { job_id: JobId, reason: String },
    /// The application on the VM starts.
    AppStarting { job_id: JobId },
    /// The application on the VM is ready at `url`.
    AppReady { job_id: JobId, url: String },
    /// The application on the VM could not start.
    AppFailed { job_id: JobId, reason: String },
    /// Taskservs to install on the running VM by install job `job_id`, in order (resolved
    /// against the catalog, with the versions it had).
    TaskservsRequested {
        job_id: JobId,
        taskservs: Vec<PlannedTaskserv>,
    },
    /// A taskserv of job `job_id` (the create whose VM boots, or an install) started.
    TaskservStarted { job_id: JobId, name: TaskservName },
    /// A taskserv installed and its health check passed; `outputs` are what it reported
    /// (a URL, where a token is kept), never a secret the platform keeps.
    TaskservInstalled {
        job_id: JobId,
        name: TaskservName,
        version: String,
        outputs: BTreeMap<String, String>,
    },
    /// A taskserv failed: its exit code and the last lines of its output.
    TaskservFailed {
        job_id: JobId,
        name: TaskservName,
        exit_code: Option<i32>,
        last_lines: Vec<String>,
    },
    /// An install job ended: each of its taskservs ran (their events tell how).
    InstallEnded { job_id: JobId },
    /// The owner gave the VM `hours` more.
    ExpiryExtended {
        hours: u16,
        #[serde(with = "time::serde::rfc3339")]
        expires_at: time::OffsetDateTime,
    },
    /// An admin set when the VM expires.
    ExpirySet {
        #[serde(with = "time::serde::rfc3339")]
        expires_at: time::OffsetDateTime,
    },
    /// The VM expires within `before_secs` seconds: a notice for its owner.
    ExpiryWarning {
        before_secs: u64,
        #[serde(with = "time::serde::rfc3339")]
        expires_at: time::OffsetDateTime,
    },
    /// The VM's time ran out: the expiry sweep asked for its destroy (the events after it).
    Expired {
        #[serde(with = "time::serde::rfc3339")]
        expires_at: time::OffsetDateTime,
        /// Why the VM is destroyed, as its owner reads it.
        #[serde(default)]
        reason: String,
    },
    /// A destroyed VM was archived: lists leave it out unless asked for archived VMs.
    Archived,
}

impl ProvisioningEvent {
    pub fn name(&self) -> &'static str {
        match self {
            ProvisioningEvent::Requested { .. } => "Requested",
            ProvisioningEvent::JobRequested { .. } => "JobRequested",
            ProvisioningEvent::JobQueued { .. } => "JobQueued",
            ProvisioningEvent::JobDispatched { .. } => "JobDispatched",
            ProvisioningEvent::JobStarted { .. } => "JobStarted",
            ProvisioningEvent::LogLine { .. } => "LogLine",
            ProvisioningEvent::Applied { .. } => "Applied",
            ProvisioningEvent::Refreshed { .. } => "Refreshed",
            ProvisioningEvent::IpChanged { .. } => "IpChanged",
            ProvisioningEvent::DriftDetected { .. } => "DriftDetected",
            ProvisioningEvent::Failed { .. } => "Failed",
            ProvisioningEvent::JobCancelRequested { .. } => "JobCancelRequested",
            ProvisioningEvent::JobCancelled { .. } => "JobCancelled",
            ProvisioningEvent::DestroyRequested => "DestroyRequested",
            ProvisioningEvent::Destroyed { .. } => "Destroyed",
            ProvisioningEvent::BootStarted { .. } => "BootStarted",
            ProvisioningEvent::PhonedHome { .. } => "PhonedHome",
            ProvisioningEvent::Unreachable { .. } => "Unreachable",
            ProvisioningEvent::AppStarting { .. } => "AppStarting",
            ProvisioningEvent::AppReady { .. } => "AppReady",
            ProvisioningEvent::AppFailed { .. } => "AppFailed",
            ProvisioningEvent::TaskservsRequested { .. } => "TaskservsRequested",
            ProvisioningEvent::TaskservStarted { .. } => "TaskservStarted",
            ProvisioningEvent::TaskservInstalled { .. } => "TaskservInstalled",
            ProvisioningEvent::TaskservFailed { .. } => "TaskservFailed",
            ProvisioningEvent::InstallEnded { .. } => "InstallEnded",
            ProvisioningEvent::ExpiryExtended { .. } => "ExpiryExtended",
            ProvisioningEvent::ExpirySet { .. } => "ExpirySet",
            ProvisioningEvent::ExpiryWarning { .. } => "ExpiryWarning",
            ProvisioningEvent::Expired { .. } => "Expired",
            ProvisioningEvent::Archived => "Archived",
        }
    }
}

impl DomainEvent for ProvisioningEvent {
    fn event_type(&self) -> String {
        self.name().to_owned()
    }

    /// 1.1: `AddressChanged` is named `IpChanged` (the store upcasts 1.0 events).
    fn event_version(&self) -> String {
        "1.1".to_owned()
    }
}
