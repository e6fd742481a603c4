//! The VM read model: what `GET /api/v1/vms/{id}` and its jobs show. Folded from events by
//! the projector; rebuilding it from the events table gives the same rows.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use super::events::{DriftedResource, JobAction, ProvisioningEvent};
use super::jobs::JobState;
use super::lifecycle::Lifecycle;
use super::values::{JobId, VmSpec};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct VmView {
    pub spec: Option<VmSpec>,
    pub lifecycle: Lifecycle,
    /// Every job of the VM, in the order they were asked for.
    #[serde(default)]
    pub jobs: Vec<JobRecord>,
    /// The aggregate sequence of the last event folded in; older events are skipped.
    pub last_sequence: u64,
    /// When the VM was requested (the time of its `Requested` event).
    #[serde(default, with = "time::serde::rfc3339::option")]
    pub requested_at: Option<OffsetDateTime>,
    /// When its last create succeeded: the boot timeout counts from here.
    #[serde(default, with = "time::serde::rfc3339::option")]
    pub boot_since: Option<OffsetDateTime>,
    /// Archived: hidden from the default list (`vm_views.archived`).
    #[serde(default)]
    pub archived: bool,
    /// What the last refresh found changed outside Terraform, until a successful create
    /// (which makes the VM as configured again) or its destroy clears it.
    #[serde(default)]
    pub drift: Option<DriftReport>,
}

/// The resources a refresh job found drifted, and when.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DriftReport {
    pub job_id: JobId,
    #[serde(with = "time::serde::rfc3339")]
    pub detected_at: OffsetDateTime,
    pub resources: Vec<DriftedResource>,
}

/// Who and when of an event, from its metadata.
#[derive(Debug, Clone, Copy)]
pub struct Stamp<'a> {
    pub at: OffsetDateTime,
    pub actor: Option<&'a str>,
}

/// One job as users follow it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobRecord {
    pub id: JobId,
    pub action: JobAction,
    pub state: JobState,
    /// Who asked for it: the actor of the event that queued it.
    pub requested_by: Option<String>,
    #[serde(with = "time::serde::rfc3339")]
    pub queued_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339::option")]
    pub started_at: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339::option")]
    pub ended_at: Option<OffsetDateTime>,
    /// Terraform's exit code, once it ran to its end.
    pub exit_code: Option<i32>,
    /// Why it failed or was cancelled.
    pub reason: Option<String>,
    #[serde(with = "time::serde::rfc3339::option")]
    pub cancel_requested_at: Option<OffsetDateTime>,
}

impl VmView {
    /// Folds one event in. Returns false, changing nothing, for an event already folded.
    pub fn update(&mut self, sequence: u64, stamp: Stamp<'_>, event: &ProvisioningEvent) -> bool {
        if sequence <= self.last_sequence {
            return false;
        }
        self.last_sequence = sequence;
        self.lifecycle.apply(event);
        match event {
            ProvisioningEvent::Requested { spec, .. } => {
                self.spec = Some(spec.clone());
                self.requested_at = Some(stamp.at);
            }
            ProvisioningEvent::Applied { .. } => self.boot_since = Some(stamp.at),
            ProvisioningEvent::Archived => self.archived = true,
            _ => {}
        }
        self.fold_job(stamp, event);
        self.fold_drift(stamp, event);
        true
    }

    /// When the VM expires: as recorded, or for a VM requested by an earlier version (whose
    /// events hold no expiry), its request's time plus its duration.
    pub fn expires_at(&self) -> Option<OffsetDateTime> {
        if let Some(expiry) = self.lifecycle.expiry {
            return Some(expiry.expires_at);
        }
        let spec = self.spec.as_ref()?;
        let hours = time::Duration::hours(spec.duration_hours.get().into());
        self.requested_at.map(|at| at + hours)
    }

    fn fold_drift(&mut self, stamp: Stamp<'_>, event: &ProvisioningEvent) {
        match event {
            ProvisioningEvent::DriftDetected { job_id, resources } => {
                self.drift = Some(DriftReport {
                    job_id: *job_id,
                    detected_at: stamp.at,
                    resources: resources.clone(),
                });
            }
            ProvisioningEvent::Applied { .. } | ProvisioningEvent::Destroyed { .. } => {
                self.drift = None;
            }
            _ => {}
        }
    }

    /// A job of the VM.
    pub fn job(&self, id: JobId) -> Option<&JobRecord> {
        self.jobs.iter().find(|j| j.id == id)
    }

    fn fold_job(&mut self, stamp: Stamp<'_>, event: &ProvisioningEvent) {
        use ProvisioningEvent as E;
        let (id, state, exit_code, reason) = match event {
            E::JobRequested { job_id, action } | E::JobQueued { job_id, action, .. } => {
                if let Some(job) = self.job_mut(*job_id) {
                    // Queued again: its claim was given up before its runner started.
                    job.state = JobState::Queued;
                } else {
                    self.jobs.push(JobRecord {
                        id: *job_id,
                        action: *action,
                        state: JobState::Queued,
                        requested_by: stamp.actor.map(str::to_owned),
                        queued_at: stamp.at,
                        started_at: None,
                        ended_at: None,
                        exit_code: None,
                        reason: None,
                        cancel_requested_at: None,
                    });
                }
                return;
            }
            E::JobDispatched { job_id, .. } => (job_id, JobState::Running, None, None),
            E::JobStarted { job_id, .. } => {
                if let Some(job) = self.job_mut(*job_id) {
                    job.state = JobState::Running;
                    job.started_at = Some(stamp.at);
                }
                return;
            }
            E::JobCancelRequested { job_id, .. } => {
                if let Some(job) = self.job_mut(*job_id) {
                    job.cancel_requested_at = Some(stamp.at);
                }
                return;
            }
            E::Applied { job_id, .. }
            | E::Refreshed { job_id, .. }
            | E::Destroyed { job_id }
            | E::InstallEnded { job_id } => (job_id, JobState::Succeeded, Some(0), None),
            E::Failed {
                job_id,
                reason,
                exit_code,
                ..
            } => (job_id, JobState::Failed, *exit_code, Some(reason)),
            E::JobCancelled {
                job_id,
                reason,
                exit_code,
                ..
            } => (job_id, JobState::Cancelled, *exit_code, Some(reason)),
            E::Requested { .. } | E::LogLine { .. } => return,
            E::IpChanged { .. } | E::DriftDetected { .. } => return,
            E::DestroyRequested => return,
            // The VM's life around its jobs: shown by the lifecycle.
            E::BootStarted { .. }
            | E::PhonedHome { .. }
            | E::Unreachable { .. }
            | E::AppStarting { .. }
            | E::AppReady { .. }
            | E::AppFailed { .. }
            | E::TaskservsRequested { .. }
            | E::TaskservStarted { .. }
            | E::TaskservInstalled { .. }
            | E::TaskservFailed { .. }
            | E::ExpiryExtended { .. }
            | E::ExpirySet { .. }
            | E::ExpiryWarning { .. }
            | E::Expired { .. } => return,
            E::Archived => return,
        };
        if let Some(job) = self.job_mut(*id) {
            job.state = state;
            if state.is_finished() {
                job.ended_at = Some(stamp.at);
                job.exit_code = exit_code;
                job.reason = reason.cloned();
            }
        }
    }

    fn job_mut(&mut self, id: JobId) -> Option<&mut JobRecord> {
        self.jobs.iter_mut().find(|j| j.id == id)
    }
}
