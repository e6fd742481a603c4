//! The taskservs of a VM: which were planned, by which job (its create, or an install on
//! the running VM), and where each is. Reports come by callback from the VM at boot, or
//! from an install job's runner; each step moves `pending` → `started` → `installed` or
//! `failed`, once.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::boot::TaskservReport;
use super::error::ProvisioningError;
use super::events::ProvisioningEvent;
use super::lifecycle::Lifecycle;
use super::limits;
use super::values::JobId;
use crate::taskservs::{OnError, PlannedTaskserv, TaskservState};

/// The most outputs a taskserv may report, and the most lines of a failure kept.
const MAX_OUTPUTS: usize = 32;
const MAX_KEY: usize = 64;
pub const MAX_LAST_LINES: usize = 20;

/// One taskserv of a VM: its step of a plan, the job that installs it, and its state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskservEntry {
    pub step: PlannedTaskserv,
    pub job: JobId,
    pub state: TaskservState,
}

impl Lifecycle {
    /// The steps of job `job_id`, in order.
    pub fn steps_of(&self, job_id: JobId) -> impl Iterator<Item = &TaskservEntry> {
        self.taskservs.iter().filter(move |e| e.job == job_id)
    }

    /// Whether every taskserv of the VM's create is over (installed, failed or skipped):
    /// the VM is `running` only then.
    pub fn boot_taskservs_over(&self) -> bool {
        let Some(boot) = &self.boot else { return true };
        self.steps_of(boot.job).all(|e| e.state.is_over())
    }

    pub(super) fn apply_taskserv(&mut self, event: &ProvisioningEvent) {
        use ProvisioningEvent as E;
        match event {
            E::TaskservsRequested { job_id, taskservs } => {
                let names: Vec<_> = taskservs.iter().map(|t| &t.name).collect();
                self.taskservs.retain(|e| !names.contains(&&e.step.name));
                self.taskservs
                    .extend(taskservs.iter().map(|step| TaskservEntry {
                        step: step.clone(),
                        job: *job_id,
                        state: TaskservState::Pending,
                    }));
            }
            E::TaskservStarted { job_id, name } => {
                self.set_state(*job_id, name, TaskservState::Started);
            }
            E::TaskservInstalled {
                job_id,
                name,
                outputs,
                ..
            } => {
                let outputs = outputs.clone();
                self.set_state(*job_id, name, TaskservState::Installed { outputs });
            }
            E::TaskservFailed {
                job_id,
                name,
                exit_code,
                last_lines,
            } => {
                let state = TaskservState::Failed {
                    exit_code: *exit_code,
                    last_lines: last_lines.clone(),
                };
                let stops = self
                    .steps_of(*job_id)
                    .find(|e| &e.step.name == name)
                    .is_some_and(|e| e.step.on_error != OnError::Continue);
                self.set_state(*job_id, name, state);
                if stops {
                    self.skip_rest(*job_id);
                }
                let code = exit_code.map_or(String::new(), |c| format!(" (exit code {c})"));
                self.last_error = Some(format!("taskserv {name} failed{code}"));
            }
            _ => return,
        }
        self.taskservs_moved();
    }

    /// The steps of a job that will not run any more (an earlier one stopped the plan, or
    /// the job ended) are skipped.
    pub(super) fn skip_rest(&mut self, job_id: JobId) {
        for entry in self.taskservs.iter_mut().filter(|e| e.job == job_id) {
            if !entry.state.is_over() {
                entry.state = TaskservState::Skipped;
            }
        }
    }

    /// The plan of the create, steps pending, once it made the VM.
    pub(super) fn plan_boot(&mut self, job_id: JobId) {
        self.taskservs = self
            .planned
            .iter()
            .map(|step| TaskservEntry {
                step: step.clone(),
                job: job_id,
                state: TaskservState::Pending,
            })
            .collect();
    }

    /// A VM that phoned home waits in `initializing` for its taskservs; the last one over
    /// makes it `running`.
    pub(super) fn taskservs_moved(&mut self) {
        use super::boot::CallbackKind;
        use super::lifecycle::VmStatus;
        let phoned = self
            .boot
            .as_ref()
            .is_some_and(|b| b.received(CallbackKind::PhoneHome));
        if phoned && self.settled == VmStatus::Initializing && self.boot_taskservs_over() {
            self.settled = VmStatus::Running;
        }
    }

    fn set_state(
        &mut self,
        job_id: JobId,
        name: &crate::taskservs::TaskservName,
        state: TaskservState,
    ) {
        if let Some(entry) = self
            .taskservs
            .iter_mut()
            .find(|e| e.job == job_id && &e.step.name == name)
        {
            entry.state = state;
        }
    }
}

/// The event of `report` for step `step` of job `job_id`; each state comes once: a report
/// for a step that is past it is refused (a callback used twice, a step not planned).
pub(super) fn report(
    lifecycle: &Lifecycle,
    job_id: JobId,
    step: u8,
    report: TaskservReport,
) -> Result<Vec<ProvisioningEvent>, ProvisioningError> {
    let refused = |why: String| Err(ProvisioningError::CallbackRefused(why));
    let Some(entry) = lifecycle.steps_of(job_id).nth(step.into()) else {
        return refused(format!("job {job_id} has no taskserv step {step}"));
    };
    let name = entry.step.name.clone();
    use TaskservState as S;
    let event = match (report, &entry.state) {
        (TaskservReport::Started, S::Pending) => {
            ProvisioningEvent::TaskservStarted { job_id, name }
        }
        (TaskservReport::Installed { outputs }, S::Pending | S::Started) => {
            ProvisioningEvent::TaskservInstalled {
                job_id,
                name,
                version: entry.step.version.clone(),
                outputs: clean_outputs(outputs),
            }
        }
        (
            TaskservReport::Failed {
                exit_code,
                last_lines,
            },
            S::Pending | S::Started,
        ) => ProvisioningEvent::TaskservFailed {
            job_id,
            name,
            exit_code,
            last_lines: clean_lines(last_lines),
        },
        (_, state) => return refused(format!("taskserv {name} is {} already", state.as_str())),
    };
    Ok(vec![event])
}

/// At most [`MAX_OUTPUTS`] outputs, keys and values cut and cleaned.
fn clean_outputs(outputs: BTreeMap<String, String>) -> BTreeMap<String, String> {
    outputs
        .into_iter()
        .filter(|(k, _)| !k.trim().is_empty())
        .take(MAX_OUTPUTS)
        .map(|(k, v)| {
            (
                limits::clean(k, MAX_KEY),
                limits::clean(v, limits::MAX_TEXT),
            )
        })
        .collect()
}

/// The last [`MAX_LAST_LINES`] lines, each cut and cleaned.
fn clean_lines(lines: Vec<String>) -> Vec<String> {
    let skip = lines.len().saturating_sub(MAX_LAST_LINES);
    lines
        .into_iter()
        .skip(skip)
        .map(|l| limits::clean(l, limits::MAX_LINE))
        .collect()
}

/// A runner's report of step `step` of install job `job_id`: as [`report`], but one that
/// came already (a message delivered twice) changes nothing.
pub(super) fn runner_report(
    lifecycle: &Lifecycle,
    job_id: JobId,
    step: u8,
    taskserv: TaskservReport,
) -> Result<Vec<ProvisioningEvent>, ProvisioningError> {
    let Some(entry) = lifecycle.steps_of(job_id).nth(step.into()) else {
        return Err(ProvisioningError::CallbackRefused(format!(
            "job {job_id} has no taskserv step {step}"
        )));
    };
    let repeat = match &taskserv {
        TaskservReport::Started => entry.state != TaskservState::Pending,
        _ => entry.state.is_over(),
    };
    match repeat {
        true => Ok(vec![]),
        false => report(lifecycle, job_id, step, taskserv),
    }
}
