//! The state machine of a VM, shared by the aggregate (which decides) and the read model
//! (which shows), so both always agree on the status.

use serde::{Deserialize, Serialize};

use super::boot::{AppStatus, Boot, CallbackKind};
use super::events::{JobAction, ProvisioningEvent};
use super::expiry::Expiry;
use super::jobs::{CancelRequest, EndedJob, JobState, WaitingJob};
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
    /// Created, and booting: cloud-init called back that it started.
    Initializing,
    /// Created, and up: cloud-init phoned home.
    Running,
    /// Created, but no phone-home came within the boot timeout.
    Unreachable,
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
            VmStatus::Initializing => "initializing",
            VmStatus::Running => "running",
            VmStatus::Unreachable => "unreachable",
            VmStatus::DestroyRequested => "destroy_requested",
            VmStatus::Destroying => "destroying",
            VmStatus::Destroyed => "destroyed",
        }
    }

    /// The status named `s` as [`VmStatus::as_str`] writes it, of those a VM can show.
    pub fn parse(s: &str) -> Option<VmStatus> {
        VmStatus::SHOWN
            .into_iter()
            .find(|status| status.as_str() == s)
    }

    /// Every status a VM can show (all but `unknown`), in the order of its life.
    pub const SHOWN: [VmStatus; 10] = [
        VmStatus::Requested,
        VmStatus::Provisioning,
        VmStatus::Provisioned,
        VmStatus::Initializing,
        VmStatus::Running,
        VmStatus::Unreachable,
        VmStatus::Failed,
        VmStatus::DestroyRequested,
        VmStatus::Destroying,
        VmStatus::Destroyed,
    ];
}

/// The job a VM runs or is about to run: queued for a runner, or started by one.
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
    /// A cancel was asked of it (details in [`Lifecycle::cancel`]).
    #[serde(default)]
    pub cancel_requested: bool,
}

impl ActiveJob {
    /// Claimed by a dispatcher or started: past the point where a cancel takes it out of
    /// the queue at once.
    pub fn running(&self) -> bool {
        self.dispatched || self.started
    }

    pub fn state(&self) -> JobState {
        match self.running() {
            true => JobState::Running,
            false => JobState::Queued,
        }
    }
}

/// Where a VM is in its life. `apply` is total and idempotent for the same event, so it can
/// fold any stored history, snapshots included.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Lifecycle {
    pub status: VmStatus,
    pub active_job: Option<ActiveJob>,
    /// The cancel asked of the active job, if any.
    pub cancel: Option<CancelRequest>,
    /// Jobs asked for while the active one runs, in the order they run.
    pub waiting: Vec<WaitingJob>,
    /// The last job number handed out, so the next one is unique.
    pub last_job: Option<JobId>,
    /// A destroy asked for while another job was active, in histories written before jobs
    /// waited in `waiting`: it is queued when that job ends.
    pub destroy_pending: bool,
    /// What the VM is when no job changes it: the outcome of its last create or destroy.
    pub settled: VmStatus,
    /// The jobs that are over, in the order they ended.
    pub ended: Vec<EndedJob>,
    pub ip: Option<String>,
    pub last_error: Option<String>,
    /// When the VM expires; none in histories of earlier versions until it is extended or
    /// set (the read model counts those from the request's time).
    #[serde(default)]
    pub expiry: Option<Expiry>,
    /// The boot of the VM the last successful create made.
    #[serde(default)]
    pub boot: Option<Boot>,
    /// What the application on the VM last reported.
    #[serde(default)]
    pub app: Option<AppStatus>,
    /// The taskservs the request planned, installed by the create once it made the VM.
    #[serde(default)]
    pub planned: Vec<crate::taskservs::PlannedTaskserv>,
    /// The VM's taskservs (its create's, then installs'), in order, with their state.
    #[serde(default)]
    pub taskservs: Vec<super::progress::TaskservEntry>,
}

impl Lifecycle {
    pub fn apply(&mut self, event: &ProvisioningEvent) {
        match event {
            ProvisioningEvent::Requested { expires_at, spec } => {
                self.settled = VmStatus::Requested;
                self.planned = spec.taskservs.clone();
                // Shown pending from the start; the create that makes the VM owns them.
                self.plan_boot(JobId::FIRST);
                self.expiry = expires_at.map(Expiry::new);
            }
            ProvisioningEvent::JobRequested { job_id, action } => {
                self.waiting.push(WaitingJob {
                    id: *job_id,
                    action: *action,
                });
                self.last_job = self.last_job.max(Some(*job_id));
                if *action == JobAction::Destroy {
                    self.destroy_pending = false;
                }
            }
            ProvisioningEvent::JobQueued { job_id, action, .. } => {
                self.waiting.retain(|w| w.id != *job_id);
                self.active_job = Some(ActiveJob {
                    id: *job_id,
                    action: *action,
                    started: false,
                    dispatched: false,
                    last_line: 0,
                    cancel_requested: false,
                });
                self.cancel = None;
                self.last_job = self.last_job.max(Some(*job_id));
                if *action == JobAction::Destroy {
                    self.destroy_pending = false;
                }
            }
            ProvisioningEvent::JobDispatched { job_id, .. } => {
                if let Some(job) = self.active(*job_id) {
                    job.dispatched = true;
                }
            }
            ProvisioningEvent::JobStarted { job_id, .. } => {
                if let Some(job) = self.active(*job_id) {
                    job.started = true;
                }
            }
            ProvisioningEvent::LogLine { job_id, line, .. } => {
                if let Some(job) = self.active(*job_id) {
                    job.last_line = job.last_line.max(*line);
                }
            }
            ProvisioningEvent::JobCancelRequested {
                job_id,
                reason,
                at,
                deadline,
            } => {
                if let Some(job) = self.active(*job_id) {
                    job.cancel_requested = true;
                    self.cancel = Some(CancelRequest {
                        at: *at,
                        reason: reason.clone(),
                        deadline: *deadline,
                    });
                }
            }
            ProvisioningEvent::Applied { job_id, vm_ip, .. } => {
                self.ip = Some(vm_ip.clone());
                self.last_error = None;
                self.settled = VmStatus::Provisioned;
                self.boot = Some(Boot::new(*job_id));
                self.app = None;
                self.plan_boot(*job_id);
                self.end(*job_id, JobAction::Create, JobState::Succeeded, false);
            }
            ProvisioningEvent::Refreshed { job_id, .. } => {
                self.last_error = None;
                self.end(*job_id, JobAction::Refresh, JobState::Succeeded, false);
            }
            ProvisioningEvent::IpChanged { vm_ip, .. } => self.ip = Some(vm_ip.clone()),
            // Shown by the read model; it changes nothing the state machine decides on.
            ProvisioningEvent::DriftDetected { .. } => {}
            ProvisioningEvent::Failed {
                job_id,
                action,
                reason,
                forced,
                ..
            } => {
                self.last_error = Some(reason.clone());
                if !action.keeps_the_vm() {
                    self.settled = VmStatus::Failed;
                }
                self.skip_rest(*job_id);
                self.end(*job_id, *action, JobState::Failed, *forced);
            }
            ProvisioningEvent::JobCancelled {
                job_id,
                action,
                reason,
                forced,
                ..
            } => {
                let was_waiting = self.waiting.iter().any(|w| w.id == *job_id);
                if !action.keeps_the_vm() && !was_waiting {
                    // A create or destroy stopped before its end leaves the VM as it was
                    // when it stopped: failed, until a retry or a destroy.
                    self.last_error = Some(reason.clone());
                    self.settled = VmStatus::Failed;
                }
                self.skip_rest(*job_id);
                self.end(*job_id, *action, JobState::Cancelled, *forced);
            }
            ProvisioningEvent::DestroyRequested => {
                // Histories of earlier versions: the destroy job followed the active one's
                // end. Now a `JobRequested` or `JobQueued` follows at once and clears it.
                self.destroy_pending = true;
            }
            ProvisioningEvent::Destroyed { job_id } => {
                self.ip = None;
                self.last_error = None;
                self.settled = VmStatus::Destroyed;
                self.boot = None;
                self.app = None;
                self.taskservs.clear();
                self.end(*job_id, JobAction::Destroy, JobState::Succeeded, false);
            }
            ProvisioningEvent::BootStarted { .. }
            | ProvisioningEvent::PhonedHome { .. }
            | ProvisioningEvent::Unreachable { .. }
            | ProvisioningEvent::AppStarting { .. }
            | ProvisioningEvent::AppReady { .. }
            | ProvisioningEvent::AppFailed { .. } => self.apply_boot(event),
            ProvisioningEvent::TaskservsRequested { .. }
            | ProvisioningEvent::TaskservStarted { .. }
            | ProvisioningEvent::TaskservInstalled { .. }
            | ProvisioningEvent::TaskservFailed { .. } => self.apply_taskserv(event),
            ProvisioningEvent::InstallEnded { job_id } => {
                self.skip_rest(*job_id);
                self.end(*job_id, JobAction::Install, JobState::Succeeded, false);
            }
            ProvisioningEvent::ExpiryExtended { expires_at, .. }
            | ProvisioningEvent::ExpirySet { expires_at } => {
                self.expiry = Some(Expiry::new(*expires_at));
            }
            ProvisioningEvent::ExpiryWarning { before_secs, .. } => {
                if let Some(expiry) = &mut self.expiry {
                    let sent = expiry
                        .warned_within
                        .map_or(*before_secs, |w| w.min(*before_secs));
                    expiry.warned_within = Some(sent);
                }
            }
            // The destroy requested with it changes the status.
            ProvisioningEvent::Expired { .. } => {}
            // Archiving hides a VM from lists; its state stays destroyed.
            ProvisioningEvent::Archived => {}
        }
        self.status = self.derive_status();
    }

    /// A callback, or its absence, from the VM the last create made: the status moves only
    /// while the VM stands (not once a create failed or it is destroyed).
    fn apply_boot(&mut self, event: &ProvisioningEvent) {
        use ProvisioningEvent as E;
        use VmStatus as S;
        let Some(boot) = &mut self.boot else { return };
        let standing = matches!(
            self.settled,
            S::Provisioned | S::Initializing | S::Running | S::Unreachable
        );
        let kind = match event {
            E::BootStarted { .. } => {
                if matches!(self.settled, S::Provisioned | S::Unreachable) {
                    self.settled = S::Initializing;
                }
                CallbackKind::BootStarted
            }
            E::PhonedHome {
                hostname,
                host_keys,
                ..
            } => {
                boot.hostname = Some(hostname.clone());
                boot.host_keys = host_keys.clone();
                boot.unreachable = false;
                if standing {
                    // Its taskservs still installing keep it `initializing`.
                    self.settled = S::Initializing;
                }
                CallbackKind::PhoneHome
            }
            E::Unreachable { .. } => {
                boot.unreachable = true;
                if matches!(self.settled, S::Provisioned | S::Initializing) {
                    self.settled = S::Unreachable;
                }
                return;
            }
            E::AppStarting { .. } => {
                self.app = Some(AppStatus::Starting);
                CallbackKind::AppStarting
            }
            E::AppReady { url, .. } => {
                self.app = Some(AppStatus::Ready { url: url.clone() });
                CallbackKind::AppReady
            }
            E::AppFailed { reason, .. } => {
                self.app = Some(AppStatus::Failed {
                    reason: reason.clone(),
                });
                CallbackKind::AppFailed
            }
            _ => return,
        };
        if !boot.received.contains(&kind) {
            boot.received.push(kind);
        }
        self.taskservs_moved();
    }

    fn active(&mut self, job_id: JobId) -> Option<&mut ActiveJob> {
        self.active_job.as_mut().filter(|j| j.id == job_id)
    }

    /// Records the end of job `id`, active or waiting.
    fn end(&mut self, id: JobId, action: JobAction, state: JobState, forced: bool) {
        if self.active_job.is_some_and(|j| j.id == id) {
            self.active_job = None;
            self.cancel = None;
        }
        self.waiting.retain(|w| w.id != id);
        if !self.ended.iter().any(|e| e.id == id) {
            self.ended.push(EndedJob {
                id,
                action,
                state,
                forced,
            });
        }
    }

    /// The status follows from the settled outcome and the jobs to come: a destroy to come
    /// shows first, then a create running or queued; a refresh leaves the status as it is.
    fn derive_status(&self) -> VmStatus {
        if matches!(self.settled, VmStatus::Unknown | VmStatus::Destroyed) {
            return self.settled;
        }
        let active = self.active_job;
        match active {
            Some(job) if job.action == JobAction::Destroy => {
                return match job.started {
                    true => VmStatus::Destroying,
                    false => VmStatus::DestroyRequested,
                };
            }
            _ if self.destroy_to_come() => return VmStatus::DestroyRequested,
            Some(job) if job.action == JobAction::Create => {
                return match job.started {
                    true => VmStatus::Provisioning,
                    false => VmStatus::Requested,
                };
            }
            _ => {}
        }
        self.settled
    }

    /// A destroy is active, waiting, or (in an earlier version's history) pending.
    pub fn destroy_to_come(&self) -> bool {
        self.destroy_pending
            || self
                .active_job
                .is_some_and(|j| j.action == JobAction::Destroy)
            || self.waiting.iter().any(|w| w.action == JobAction::Destroy)
    }

    pub fn next_job_id(&self) -> JobId {
        self.last_job.map_or(JobId::FIRST, |j| j.next())
    }

    /// How job `id` ended, if it did.
    pub fn ended_job(&self, id: JobId) -> Option<&EndedJob> {
        self.ended.iter().find(|e| e.id == id)
    }

    /// The action a retry runs again: that of the last create or destroy, when it failed or
    /// was cancelled and nothing has succeeded since.
    pub fn retryable(&self) -> Option<JobAction> {
        let last = self.ended.iter().rev().find(|e| !e.action.keeps_the_vm())?;
        match last.state {
            JobState::Failed | JobState::Cancelled if self.settled == VmStatus::Failed => {
                Some(last.action)
            }
            _ => None,
        }
    }
}
