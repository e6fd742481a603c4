//! Job control: a job cancelled or force-cancelled, queued, started in turn, and finished
//! with its outcome; Terraform's lines recorded once each. (A part of the aggregate, apart
//! for size.)

use super::Provisioning;
use crate::provisioning::commands::{JobOutcome, LogLineIn};
use crate::provisioning::error::ProvisioningError;
use crate::provisioning::events::{JobAction, ProvisioningEvent, Severity};
use crate::provisioning::lifecycle::{ActiveJob, VmStatus};
use crate::provisioning::limits;
use crate::provisioning::values::JobId;

impl Provisioning {
    pub(super) fn cancel(
        &self,
        job_id: JobId,
        reason: String,
        at: time::OffsetDateTime,
        deadline: bool,
    ) -> Result<Vec<ProvisioningEvent>, ProvisioningError> {
        let lifecycle = &self.lifecycle;
        if lifecycle.status == VmStatus::Unknown {
            return Err(ProvisioningError::NotFound);
        }
        let reason = limits::clean(reason, limits::MAX_TEXT);
        let cancelled = |action| ProvisioningEvent::JobCancelled {
            job_id,
            action,
            reason: reason.clone(),
            exit_code: None,
            forced: false,
        };
        if let Some(waiting) = lifecycle.waiting.iter().find(|w| w.id == job_id) {
            return Ok(vec![cancelled(waiting.action)]);
        }
        match lifecycle.active_job.filter(|j| j.id == job_id) {
            Some(job) if !job.running() => {
                let mut events = vec![cancelled(job.action)];
                events.extend(self.next_to_run()?);
                Ok(events)
            }
            Some(job) if job.cancel_requested => Ok(vec![]), // asked already
            Some(_) => Ok(vec![ProvisioningEvent::JobCancelRequested {
                job_id,
                reason,
                at,
                deadline,
            }]),
            None => Err(self.not_active(job_id)),
        }
    }

    pub(super) fn force_cancel(
        &self,
        job_id: JobId,
        at: time::OffsetDateTime,
        cool_off: std::time::Duration,
    ) -> Result<Vec<ProvisioningEvent>, ProvisioningError> {
        let lifecycle = &self.lifecycle;
        if lifecycle.status == VmStatus::Unknown {
            return Err(ProvisioningError::NotFound);
        }
        let Some(job) = lifecycle.active_job.filter(|j| j.id == job_id) else {
            return match lifecycle.waiting.iter().any(|w| w.id == job_id) {
                true => Err(ProvisioningError::CancelFirst(job_id)),
                false => Err(self.not_active(job_id)),
            };
        };
        let Some(cancel) = lifecycle.cancel.as_ref().filter(|_| job.cancel_requested) else {
            return Err(ProvisioningError::CancelFirst(job_id));
        };
        let elapsed = (at - cancel.at).whole_seconds().max(0) as u64;
        if elapsed < cool_off.as_secs() {
            return Err(ProvisioningError::CoolingOff {
                job_id,
                elapsed,
                cool_off: cool_off.as_secs(),
            });
        }
        let reason = format!(
            "{}; it did not stop within {} s of its cancel and was forced off",
            cancel.reason,
            cool_off.as_secs()
        );
        let reason = limits::clean(reason, limits::MAX_TEXT);
        let ended = match cancel.deadline {
            true => ProvisioningEvent::Failed {
                job_id,
                action: job.action,
                reason,
                diagnostics: vec![],
                exit_code: None,
                forced: true,
            },
            false => ProvisioningEvent::JobCancelled {
                job_id,
                action: job.action,
                reason,
                exit_code: None,
                forced: true,
            },
        };
        let mut events = vec![ended];
        events.extend(self.next_to_run()?);
        Ok(events)
    }

    /// Why job `job_id`, not active nor waiting, cannot be acted on.
    pub(super) fn not_active(&self, job_id: JobId) -> ProvisioningError {
        match self.lifecycle.ended_job(job_id) {
            Some(ended) => ProvisioningError::JobFinished(job_id, ended.state),
            None => ProvisioningError::NoSuchJob(job_id),
        }
    }

    /// Whether a job of `action` waits and has not started: a second request for it is the
    /// same request.
    pub(super) fn queued(&self, action: JobAction) -> bool {
        let lifecycle = &self.lifecycle;
        lifecycle
            .active_job
            .is_some_and(|j| j.action == action && !j.running())
            || lifecycle.waiting.iter().any(|w| w.action == action)
    }

    /// A new job of `action`: next to run when nothing is active, else waiting behind.
    pub(super) fn enqueue(
        &self,
        action: JobAction,
    ) -> Result<ProvisioningEvent, ProvisioningError> {
        let job_id = self.lifecycle.next_job_id();
        match self.lifecycle.active_job {
            None => self.queue(job_id, action),
            Some(_) => Ok(ProvisioningEvent::JobRequested { job_id, action }),
        }
    }

    /// Once the active job ends: the first waiting job (or an earlier version's pending
    /// destroy) is next to run.
    pub(super) fn next_to_run(&self) -> Result<Option<ProvisioningEvent>, ProvisioningError> {
        let lifecycle = &self.lifecycle;
        if let Some(next) = lifecycle.waiting.first() {
            return self.queue(next.id, next.action).map(Some);
        }
        if lifecycle.destroy_pending {
            return self
                .queue(lifecycle.next_job_id(), JobAction::Destroy)
                .map(Some);
        }
        Ok(None)
    }

    pub(super) fn queue(
        &self,
        job_id: JobId,
        action: JobAction,
    ) -> Result<ProvisioningEvent, ProvisioningError> {
        let mut spec = self.spec.clone().ok_or(ProvisioningError::NotFound)?;
        if action == JobAction::Install {
            // An install job's message carries its own steps, not the create's plan.
            spec.taskservs = self
                .lifecycle
                .steps_of(job_id)
                .map(|e| e.step.clone())
                .collect();
        }
        Ok(ProvisioningEvent::JobQueued {
            job_id,
            action,
            spec,
        })
    }

    pub(super) fn active_job(&self, job_id: JobId) -> Result<ActiveJob, ProvisioningError> {
        if self.lifecycle.status == VmStatus::Unknown {
            return Err(ProvisioningError::NotFound);
        }
        self.lifecycle
            .active_job
            .filter(|job| job.id == job_id)
            .ok_or(ProvisioningError::JobNotActive(job_id))
    }

    /// The events that end a job with the runner's `outcome`. A job whose cancel was asked
    /// and whose Terraform stopped with an error ended cancelled (failed, when the cancel
    /// came from its deadline); one that finished anyway succeeded. Diagnostics and the
    /// reason are cleaned and cut here ([`limits`]), so a huge or NUL-laden result still
    /// makes an event that can be stored and published.
    pub(super) fn finish(&self, job: ActiveJob, outcome: JobOutcome) -> Vec<ProvisioningEvent> {
        let exit_code = (outcome.exit_code != -1).then_some(outcome.exit_code);
        let failed = |reason: String, diagnostics| ProvisioningEvent::Failed {
            job_id: job.id,
            action: job.action,
            reason: limits::clean(reason, limits::MAX_TEXT),
            diagnostics: limits::clean_diagnostics(diagnostics),
            exit_code,
            forced: false,
        };
        if outcome.exit_code != 0 {
            if let Some(cancel) = self
                .lifecycle
                .cancel
                .as_ref()
                .filter(|_| job.cancel_requested)
            {
                if cancel.deadline {
                    return vec![failed(cancel.reason.clone(), outcome.diagnostics)];
                }
                return vec![ProvisioningEvent::JobCancelled {
                    job_id: job.id,
                    action: job.action,
                    reason: cancel.reason.clone(),
                    exit_code,
                    forced: false,
                }];
            }
            let reason = outcome
                .diagnostics
                .iter()
                .find(|d| d.severity == Severity::Error)
                .map(|d| match d.detail.is_empty() {
                    true => d.summary.clone(),
                    false => format!("{}: {}", d.summary, d.detail),
                })
                .unwrap_or_else(|| format!("terraform exited with code {}", outcome.exit_code));
            return vec![failed(reason, outcome.diagnostics)];
        }
        let vm_ip = outcome
            .outputs
            .get("vm_ip")
            .and_then(|v| v.as_str())
            .filter(|ip| !ip.is_empty())
            .map(str::to_owned);
        match (job.action, vm_ip) {
            (JobAction::Install, _) => vec![ProvisioningEvent::InstallEnded { job_id: job.id }],
            (JobAction::Destroy, _) => vec![ProvisioningEvent::Destroyed { job_id: job.id }],
            (JobAction::Create, Some(vm_ip)) => vec![ProvisioningEvent::Applied {
                job_id: job.id,
                vm_ip,
                outputs: outcome.outputs.clone(),
            }],
            (JobAction::Create, None) => vec![failed(
                "terraform succeeded but gave no vm_ip output".to_owned(),
                outcome.diagnostics,
            )],
            (JobAction::Refresh, vm_ip) => {
                let mut events = vec![ProvisioningEvent::Refreshed {
                    job_id: job.id,
                    outputs: outcome.outputs.clone(),
                }];
                if let Some(vm_ip) = vm_ip.filter(|ip| self.lifecycle.ip.as_ref() != Some(ip)) {
                    events.push(ProvisioningEvent::IpChanged {
                        job_id: job.id,
                        vm_ip,
                    });
                }
                if !outcome.drift.is_empty() {
                    events.push(ProvisioningEvent::DriftDetected {
                        job_id: job.id,
                        resources: limits::clean_drift(outcome.drift),
                    });
                }
                events
            }
        }
    }
}

/// The lines not recorded yet, in order: a redelivered batch adds nothing twice, and a
/// batch that skips a line is refused until the missing line is there, so no line is lost
/// when messages arrive out of order.
pub(super) fn new_lines(
    job: ActiveJob,
    mut lines: Vec<LogLineIn>,
) -> Result<Vec<ProvisioningEvent>, ProvisioningError> {
    lines.sort_by_key(|l| l.line);
    lines.dedup_by_key(|l| l.line);
    lines.retain(|l| l.line > job.last_line);
    for (expected, line) in (job.last_line + 1..).zip(lines.iter()) {
        if line.line != expected {
            return Err(ProvisioningError::LineGap {
                job_id: job.id,
                expected,
                got: line.line,
            });
        }
    }
    Ok(lines
        .into_iter()
        .map(|l| ProvisioningEvent::LogLine {
            job_id: job.id,
            line: l.line,
            level: limits::clean(l.level, limits::MAX_TEXT),
            kind: limits::clean(l.kind, limits::MAX_TEXT),
            message: limits::clean(l.message, limits::MAX_LINE),
        })
        .collect())
}
