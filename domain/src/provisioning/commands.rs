//! What users and the pipeline ask of a VM.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::boot::BootReport;
use super::events::{Diagnostic, DriftedResource};
use super::values::{JobId, VmSpec};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ProvisioningCommand {
    /// Create the VM: records the request and queues the apply job. `at`: when it was
    /// asked, from which the VM's expiry counts.
    Request {
        spec: VmSpec,
        at: time::OffsetDateTime,
    },
    /// A dispatcher takes a queued job to start its runner: the claim that makes a second
    /// delivery of the job message, or a second dispatcher, leave it alone.
    ClaimJob { job_id: JobId, dispatcher: String },
    /// Put a job claimed by a dispatcher that never started its runner (the dispatcher died
    /// in between) back in the queue, for another claim.
    RequeueJob { job_id: JobId },
    /// The runner of a job started (from the runner's `started` message).
    StartJob { job_id: JobId, runner: String },
    /// A batch of Terraform lines of one job, written in one transaction.
    RecordLogs {
        job_id: JobId,
        lines: Vec<LogLineIn>,
    },
    /// The runner of a job ended (from its `result` message).
    FinishJob { job_id: JobId, outcome: JobOutcome },
    /// Destroy the VM, now or after the jobs before it.
    RequestDestroy,
    /// Read what the cloud has (a refresh-only plan, applied), now or after the jobs before
    /// it.
    Refresh,
    /// Run the failed create or destroy again.
    Retry,
    /// Cancel a job: a queued one is taken out at once; a running one's Terraform gets an
    /// interrupt. `deadline`: asked because the job ran past its deadline.
    CancelJob {
        job_id: JobId,
        reason: String,
        at: time::OffsetDateTime,
        deadline: bool,
    },
    /// End a running job whose cancel did not stop it within the cool-off: its runner is
    /// killed.
    ForceCancelJob {
        job_id: JobId,
        at: time::OffsetDateTime,
        cool_off: std::time::Duration,
    },
    /// A callback from the VM made by create job `job_id` (its token checked by the API).
    Callback { job_id: JobId, report: BootReport },
    /// Install taskservs on the running VM (a plan resolved against the catalog): an
    /// install job, now or after the jobs before it.
    InstallTaskservs {
        taskservs: Vec<crate::taskservs::PlannedTaskserv>,
    },
    /// What install job `job_id`'s runner reported of its step `step`. A report that came
    /// already changes nothing (the runner's messages may be delivered twice).
    ReportTaskserv {
        job_id: JobId,
        step: u8,
        report: super::boot::TaskservReport,
    },
    /// The VM made by create job `job_id` did not phone home in time.
    MarkUnreachable { job_id: JobId, reason: String },
    /// Give the VM `hours` more, within the longest duration from `at`, and no later than
    /// `limit` (the policies' longest life for the caller) when there is one.
    Extend {
        hours: u16,
        at: time::OffsetDateTime,
        #[serde(default)]
        limit: Option<super::expiry::ExtendLimit>,
    },
    /// Set when the VM expires (admins), later than `at`.
    SetExpiry {
        expires_at: time::OffsetDateTime,
        at: time::OffsetDateTime,
    },
    /// Warn that the VM expires within `before`, if that warning is due at `at`.
    WarnExpiry {
        before: std::time::Duration,
        at: time::OffsetDateTime,
    },
    /// Destroy the VM if its time ran out at `at`.
    Expire { at: time::OffsetDateTime },
    /// Hide a destroyed VM from the default list; its history stays as it is.
    Archive,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogLineIn {
    pub line: u32,
    pub level: String,
    pub kind: String,
    pub message: String,
}

/// How a runner ended. The exit code decides success, never the text of a log line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobOutcome {
    pub exit_code: i32,
    /// Non-sensitive values of `terraform output -json`.
    pub outputs: BTreeMap<String, serde_json::Value>,
    /// The error diagnostics Terraform printed.
    pub diagnostics: Vec<Diagnostic>,
    /// How many lines the runner published; the job ends only once all are recorded.
    #[serde(default)]
    pub lines: u32,
    /// The resources a refresh found changed outside Terraform; empty for other jobs.
    #[serde(default)]
    pub drift: Vec<DriftedResource>,
}
