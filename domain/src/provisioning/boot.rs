//! After a create: the VM boots and calls back (cloud-init), and the application on it
//! reports its readiness. Each callback kind is accepted once per create job.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::error::ProvisioningError;
use super::events::ProvisioningEvent;
use super::lifecycle::{Lifecycle, VmStatus};
use super::limits;
use super::values::JobId;

/// What a VM reports at `POST /api/v1/callbacks/{token}`; the token names the kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallbackKind {
    /// cloud-init's `bootcmd` ran: the VM boots (`initializing`).
    BootStarted,
    /// cloud-init's `phone_home` module: the VM is up (`running`), with its hostname.
    PhoneHome,
    /// The application on the VM starts.
    AppStarting,
    /// The application is ready, at the URL it reports.
    AppReady,
    /// The application could not start, for the reason it reports.
    AppFailed,
    /// A taskserv of the VM's plan starts (its step in the token).
    TaskservStarted,
    /// A taskserv installed and is healthy, with its outputs.
    TaskservInstalled,
    /// A taskserv failed, with its exit code and last lines.
    TaskservFailed,
}

impl CallbackKind {
    /// Every kind, in the order tokens encode them (append only).
    pub const ALL: [CallbackKind; 8] = [
        CallbackKind::BootStarted,
        CallbackKind::PhoneHome,
        CallbackKind::AppStarting,
        CallbackKind::AppReady,
        CallbackKind::AppFailed,
        CallbackKind::TaskservStarted,
        CallbackKind::TaskservInstalled,
        CallbackKind::TaskservFailed,
    ];

    /// The kinds every booting VM is given a URL for; taskserv kinds come per step.
    pub const BOOT: [CallbackKind; 5] = [
        CallbackKind::BootStarted,
        CallbackKind::PhoneHome,
        CallbackKind::AppStarting,
        CallbackKind::AppReady,
        CallbackKind::AppFailed,
    ];

    /// The kinds of one taskserv step.
    pub const TASKSERV: [CallbackKind; 3] = [
        CallbackKind::TaskservStarted,
        CallbackKind::TaskservInstalled,
        CallbackKind::TaskservFailed,
    ];

    pub fn as_str(&self) -> &'static str {
        match self {
            CallbackKind::BootStarted => "boot_started",
            CallbackKind::PhoneHome => "phone_home",
            CallbackKind::AppStarting => "app_starting",
            CallbackKind::AppReady => "app_ready",
            CallbackKind::AppFailed => "app_failed",
            CallbackKind::TaskservStarted => "taskserv_started",
            CallbackKind::TaskservInstalled => "taskserv_installed",
            CallbackKind::TaskservFailed => "taskserv_failed",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

/// A callback with what it carries, checked at the boundary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum BootReport {
    BootStarted,
    PhoneHome {
        hostname: String,
        /// The VM's SSH host keys (public), as cloud-init posts them.
        host_keys: Vec<String>,
    },
    AppStarting,
    AppReady {
        url: String,
    },
    AppFailed {
        reason: String,
    },
    /// Step `step` (its index in the plan) of the VM's taskservs.
    Taskserv {
        step: u8,
        report: TaskservReport,
    },
}

/// What a taskserv reports, by callback or from an install job's runner.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum TaskservReport {
    Started,
    Installed {
        outputs: BTreeMap<String, String>,
    },
    Failed {
        exit_code: Option<i32>,
        last_lines: Vec<String>,
    },
}

impl TaskservReport {
    pub fn kind(&self) -> CallbackKind {
        match self {
            TaskservReport::Started => CallbackKind::TaskservStarted,
            TaskservReport::Installed { .. } => CallbackKind::TaskservInstalled,
            TaskservReport::Failed { .. } => CallbackKind::TaskservFailed,
        }
    }
}

impl BootReport {
    pub fn kind(&self) -> CallbackKind {
        match self {
            BootReport::BootStarted => CallbackKind::BootStarted,
            BootReport::PhoneHome { .. } => CallbackKind::PhoneHome,
            BootReport::AppStarting => CallbackKind::AppStarting,
            BootReport::AppReady { .. } => CallbackKind::AppReady,
            BootReport::AppFailed { .. } => CallbackKind::AppFailed,
            BootReport::Taskserv { report, .. } => report.kind(),
        }
    }
}

/// The boot of the VM made by a create job: which callbacks came.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Boot {
    /// The create job whose VM boots: callbacks of other jobs are refused.
    pub job: JobId,
    pub received: Vec<CallbackKind>,
    pub hostname: Option<String>,
    /// The SSH host keys it posted when it phoned home: an install job trusts these alone.
    #[serde(default)]
    pub host_keys: Vec<String>,
    /// No phone-home came within the boot timeout.
    pub unreachable: bool,
}

impl Boot {
    pub fn new(job: JobId) -> Self {
        Self {
            job,
            received: vec![],
            hostname: None,
            host_keys: vec![],
            unreachable: false,
        }
    }

    pub fn received(&self, kind: CallbackKind) -> bool {
        self.received.contains(&kind)
    }
}

/// Where the application on the VM is, as it reported.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum AppStatus {
    Starting,
    Ready { url: String },
    Failed { reason: String },
}

/// Whether the VM stands: made by its last create and not destroyed since. Callbacks move
/// only a standing VM.
fn standing(lifecycle: &Lifecycle) -> bool {
    use VmStatus as S;
    matches!(
        lifecycle.settled,
        S::Provisioned | S::Initializing | S::Running | S::Unreachable
    ) && !lifecycle.destroy_to_come()
}

/// The event of a callback from the VM made by create job `job_id`: refused for a job
/// whose VM does not stand (any more), and for a kind that came already (each is single
/// use).
pub(super) fn callback(
    lifecycle: &Lifecycle,
    job_id: JobId,
    report: BootReport,
) -> Result<Vec<ProvisioningEvent>, ProvisioningError> {
    let kind = report.kind();
    let refused = |why: String| Err(ProvisioningError::CallbackRefused(why));

    let Some(boot) = lifecycle.boot.as_ref().filter(|b| b.job == job_id) else {
        return refused(format!("no VM of job {job_id} stands"));
    };
    if !standing(lifecycle) {
        return refused(format!("the VM is {}", lifecycle.status.as_str()));
    }
    // A taskserv's kinds come once per step: its progress decides.
    if boot.received(kind) && !CallbackKind::TASKSERV.contains(&kind) {
        return refused(format!("{} was reported already", kind.as_str()));
    }
    use ProvisioningEvent as E;
    let event = match report {
        BootReport::BootStarted => E::BootStarted { job_id },
        BootReport::PhoneHome {
            hostname,
            host_keys,
        } => E::PhonedHome {
            job_id,
            hostname: limits::clean(hostname, limits::MAX_NAME),
            host_keys: host_keys
                .into_iter()
                .take(8)
                .map(|k| limits::clean(k, limits::MAX_TEXT))
                .collect(),
        },
        BootReport::AppStarting => E::AppStarting { job_id },
        BootReport::AppReady { url } => E::AppReady {
            job_id,
            url: limits::clean(url, limits::MAX_TEXT),
        },
        BootReport::AppFailed { reason } => E::AppFailed {
            job_id,
            reason: limits::clean(reason, limits::MAX_TEXT),
        },
        BootReport::Taskserv { step, report } => {
            return super::progress::report(lifecycle, job_id, step, report)
        }
    };
    Ok(vec![event])
}

/// `Unreachable` for the VM of create job `job_id` that never phoned home; nothing when it
/// did meanwhile, or is no longer the VM that boots (a stale sweep).
pub(super) fn unreachable(
    lifecycle: &Lifecycle,
    job_id: JobId,
    reason: String,
) -> Result<Vec<ProvisioningEvent>, ProvisioningError> {
    let booting = lifecycle
        .boot
        .as_ref()
        .is_some_and(|b| b.job == job_id && !b.unreachable && !b.received(CallbackKind::PhoneHome));
    let waiting = matches!(
        lifecycle.settled,
        VmStatus::Provisioned | VmStatus::Initializing
    );
    if !booting || !waiting || !standing(lifecycle) {
        return Ok(vec![]);
    }
    Ok(vec![ProvisioningEvent::Unreachable {
        job_id,
        reason: limits::clean(reason, limits::MAX_TEXT),
    }])
}
