use cqrs_es::event_sink::EventSink;
use cqrs_es::Aggregate;
use serde::{Deserialize, Serialize};

use super::boot;
use super::commands::{JobOutcome, LogLineIn, ProvisioningCommand};
use super::error::ProvisioningError;
use super::events::{JobAction, ProvisioningEvent, Severity};
use super::expiry;
use super::lifecycle::{ActiveJob, Lifecycle, VmStatus};
use super::limits;
use super::values::{JobId, VmSpec};
use crate::Decide;

#[path = "install.rs"]
mod install;

/// One VM: its request and the Terraform jobs run for it. Jobs of one VM never run in
/// parallel: a job asked for while another is active waits behind it, in order.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Provisioning {
    spec: Option<VmSpec>,
    lifecycle: Lifecycle,
    /// Archived (`Archived`): hidden from the default list. Absent from snapshots of
    /// earlier versions.
    #[serde(default)]
    archived: bool,
}

impl Aggregate for Provisioning {
    const TYPE: &'static str = "Provisioning";
    type Command = ProvisioningCommand;
    type Event = ProvisioningEvent;
    type Error = ProvisioningError;
    type Services = ();

    async fn handle(
        &mut self,
        command: Self::Command,
        _services: &Self::Services,
        sink: &EventSink<Self>,
    ) -> Result<(), Self::Error> {
        for event in Decide::decide(self, command, &())? {
            sink.write(event, self).await;
        }
        Ok(())
    }

    fn apply(&mut self, event: Self::Event) {
        self.lifecycle.apply(&event);
        match event {
            ProvisioningEvent::Requested { spec, .. } => self.spec = Some(spec),
            ProvisioningEvent::Archived => self.archived = true,
            _ => {}
        }
    }
}

impl Provisioning {
    pub fn status(&self) -> VmStatus {
        self.lifecycle.status
    }

    /// Where the VM is in its life.
    pub fn lifecycle(&self) -> &Lifecycle {
        &self.lifecycle
    }

    /// What was requested, once it was.
    pub fn spec(&self) -> Option<&VmSpec> {
        self.spec.as_ref()
    }

    /// Whether the VM was archived.
    pub fn archived(&self) -> bool {
        self.archived
    }
}

impl Decide for Provisioning {
    fn decide(
        &self,
        command: ProvisioningCommand,
        _services: &(),
    ) -> Result<Vec<ProvisioningEvent>, ProvisioningError> {
        match command {
            ProvisioningCommand::Request { spec, at } => self.request(spec, at),
            ProvisioningCommand::ClaimJob { job_id, dispatcher } => {
                let job = self.active_job(job_id)?;
                if job.running() {
                    return Err(ProvisioningError::JobTaken(job_id));
                }
                Ok(vec![ProvisioningEvent::JobDispatched {
                    job_id,
                    dispatcher,
                }])
            }
            ProvisioningCommand::RequeueJob { job_id } => {
                let job = self.active_job(job_id)?;
                if job.started || !job.dispatched {
                    return Err(ProvisioningError::JobTaken(job_id));
                }
                if job.cancel_requested {
                    // Cancelled before any runner started: it ends as a cancel that stopped
                    // it (with no exit code), not back in the queue.
                    let nothing_ran = JobOutcome {
                        exit_code: -1,
                        outputs: Default::default(),
                        diagnostics: vec![],
                        lines: job.last_line,
                        drift: vec![],
                    };
                    let mut events = self.finish(job, nothing_ran);
                    events.extend(self.next_to_run()?);
                    return Ok(events);
                }
                Ok(vec![self.queue(job_id, job.action)?])
            }
            ProvisioningCommand::StartJob { job_id, runner } => {
                let job = self.active_job(job_id)?;
                if job.started {
                    return Ok(vec![]); // a redelivered `started` message
                }
                Ok(vec![ProvisioningEvent::JobStarted {
                    job_id,
                    action: job.action,
                    runner,
                }])
            }
            ProvisioningCommand::RecordLogs { job_id, lines } => {
                let job = self.active_job(job_id)?;
                new_lines(job, lines)
            }
            ProvisioningCommand::FinishJob { job_id, outcome } => {
                let job = self.active_job(job_id)?;
                if outcome.lines > job.last_line {
                    // The result overtook some lines: record them first.
                    return Err(ProvisioningError::LinesMissing {
                        job_id,
                        reported: outcome.lines,
                        recorded: job.last_line,
                    });
                }
                let mut events = self.finish(job, outcome);
                events.extend(self.next_to_run()?);
                Ok(events)
            }
            ProvisioningCommand::RequestDestroy => self.request_destroy(),
            ProvisioningCommand::Refresh => self.refresh(),
            ProvisioningCommand::Retry => self.retry(),
            ProvisioningCommand::CancelJob {
                job_id,
                reason,
                at,
                deadline,
            } => self.cancel(job_id, reason, at, deadline),
            ProvisioningCommand::ForceCancelJob {
                job_id,
                at,
                cool_off,
            } => self.force_cancel(job_id, at, cool_off),
            ProvisioningCommand::Callback { job_id, report } => {
                self.existing()?;
                boot::callback(&self.lifecycle, job_id, report)
            }
            ProvisioningCommand::InstallTaskservs { taskservs } => self.install(taskservs),
            ProvisioningCommand::ReportTaskserv {
                job_id,
                step,
                report,
            } => self.report_taskserv(job_id, step, report),
            ProvisioningCommand::MarkUnreachable { job_id, reason } => {
                self.existing()?;
                boot::unreachable(&self.lifecycle, job_id, reason)
            }
            ProvisioningCommand::Extend { hours, at, limit } => {
                self.existing()?;
                expiry::extend(&self.lifecycle, hours, at, limit.as_ref())
            }
            ProvisioningCommand::SetExpiry { expires_at, at } => {
                self.existing()?;
                expiry::set(&self.lifecycle, expires_at, at)
            }
            ProvisioningCommand::WarnExpiry { before, at } => {
                self.existing()?;
                expiry::warn(&self.lifecycle, before, at)
            }
            ProvisioningCommand::Expire { at } => self.expire(at),
            ProvisioningCommand::Archive => self.archive(),
        }
    }
}

impl Provisioning {
    fn request(
        &self,
        spec: VmSpec,
        at: time::OffsetDateTime,
    ) -> Result<Vec<ProvisioningEvent>, ProvisioningError> {
        if self.lifecycle.status != VmStatus::Unknown {
            return Err(ProvisioningError::AlreadyRequested);
        }
        let lives = time::Duration::hours(spec.duration_hours.get().into());
        Ok(vec![
            ProvisioningEvent::Requested {
                spec: spec.clone(),
                expires_at: Some(expiry::micros(at + lives)),
            },
            ProvisioningEvent::JobQueued {
                job_id: JobId::FIRST,
                action: JobAction::Create,
                spec,
            },
        ])
    }

    fn existing(&self) -> Result<(), ProvisioningError> {
        match self.lifecycle.status {
            VmStatus::Unknown => Err(ProvisioningError::NotFound),
            _ => Ok(()),
        }
    }

    /// The destroy of a VM whose time ran out; nothing when a destroy is to come already.
    /// Refused when the expiry moved past `at` since the sweep looked.
    fn expire(
        &self,
        at: time::OffsetDateTime,
    ) -> Result<Vec<ProvisioningEvent>, ProvisioningError> {
        self.existing()?;
        let lifecycle = &self.lifecycle;
        if lifecycle.destroy_to_come() || lifecycle.status == VmStatus::Destroyed {
            return Ok(vec![]);
        }
        let Some(expiry) = lifecycle.expiry.filter(|e| e.expires_at <= at) else {
            return Err(ProvisioningError::NotExpired);
        };
        let when = expiry
            .expires_at
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default();
        let mut events = vec![ProvisioningEvent::Expired {
            expires_at: expiry.expires_at,
            reason: format!("the VM expired at {when}: its time ran out"),
        }];
        events.extend(self.request_destroy()?);
        Ok(events)
    }

    /// A destroy already to come answers as it is (no second one); one that runs, or a VM
    /// destroyed, is refused.
    fn request_destroy(&self) -> Result<Vec<ProvisioningEvent>, ProvisioningError> {
        let lifecycle = &self.lifecycle;
        match lifecycle.status {
            VmStatus::Unknown => Err(ProvisioningError::NotFound),
            s @ (VmStatus::Destroying | VmStatus::Destroyed) => {
                Err(ProvisioningError::AlreadyDestroying(s))
            }
            _ if lifecycle.destroy_to_come() => Ok(vec![]),
            _ => Ok(vec![
                ProvisioningEvent::DestroyRequested,
                self.enqueue(JobAction::Destroy)?,
            ]),
        }
    }

    fn refresh(&self) -> Result<Vec<ProvisioningEvent>, ProvisioningError> {
        let status = self.lifecycle.status;
        if status == VmStatus::Unknown {
            return Err(ProvisioningError::NotFound);
        }
        if self.lifecycle.destroy_to_come() || status == VmStatus::Destroyed {
            return Err(ProvisioningError::CannotRefresh(status));
        }
        if self.queued(JobAction::Refresh) {
            return Ok(vec![]); // the same request, waiting already
        }
        Ok(vec![self.enqueue(JobAction::Refresh)?])
    }

    fn retry(&self) -> Result<Vec<ProvisioningEvent>, ProvisioningError> {
        let lifecycle = &self.lifecycle;
        if lifecycle.status == VmStatus::Unknown {
            return Err(ProvisioningError::NotFound);
        }
        let action = lifecycle
            .retryable()
            .ok_or(ProvisioningError::NothingToRetry)?;
        let pending = lifecycle.active_job.is_some_and(|j| j.action == action)
            || lifecycle.waiting.iter().any(|w| w.action == action);
        if pending {
            return Ok(vec![]); // retried already: the same request
        }
        if action == JobAction::Create && lifecycle.destroy_to_come() {
            return Err(ProvisioningError::AlreadyDestroying(lifecycle.status));
        }
        Ok(vec![self.enqueue(action)?])
    }

    fn cancel(
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

    fn force_cancel(
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

    /// Only a destroyed VM is archived; archiving it again changes nothing.
    fn archive(&self) -> Result<Vec<ProvisioningEvent>, ProvisioningError> {
        match self.lifecycle.status {
            VmStatus::Unknown => Err(ProvisioningError::NotFound),
            VmStatus::Destroyed if self.archived => Ok(vec![]),
            VmStatus::Destroyed => Ok(vec![ProvisioningEvent::Archived]),
            status => Err(ProvisioningError::NotDestroyed(status)),
        }
    }

    /// Why job `job_id`, not active nor waiting, cannot be acted on.
    fn not_active(&self, job_id: JobId) -> ProvisioningError {
        match self.lifecycle.ended_job(job_id) {
            Some(ended) => ProvisioningError::JobFinished(job_id, ended.state),
            None => ProvisioningError::NoSuchJob(job_id),
        }
    }

    /// Whether a job of `action` waits and has not started: a second request for it is the
    /// same request.
    fn queued(&self, action: JobAction) -> bool {
        let lifecycle = &self.lifecycle;
        lifecycle
            .active_job
            .is_some_and(|j| j.action == action && !j.running())
            || lifecycle.waiting.iter().any(|w| w.action == action)
    }

    /// A new job of `action`: next to run when nothing is active, else waiting behind.
    fn enqueue(&self, action: JobAction) -> Result<ProvisioningEvent, ProvisioningError> {
        let job_id = self.lifecycle.next_job_id();
        match self.lifecycle.active_job {
            None => self.queue(job_id, action),
            Some(_) => Ok(ProvisioningEvent::JobRequested { job_id, action }),
        }
    }

    /// Once the active job ends: the first waiting job (or an earlier version's pending
    /// destroy) is next to run.
    fn next_to_run(&self) -> Result<Option<ProvisioningEvent>, ProvisioningError> {
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

    fn queue(
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

    fn active_job(&self, job_id: JobId) -> Result<ActiveJob, ProvisioningError> {
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
    fn finish(&self, job: ActiveJob, outcome: JobOutcome) -> Vec<ProvisioningEvent> {
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
fn new_lines(
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

#[cfg(test)]
#[path = "aggregate_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "jobs_tests.rs"]
mod jobs_tests;

#[cfg(test)]
#[path = "archive_tests.rs"]
mod archive_tests;

#[cfg(test)]
#[path = "life_tests.rs"]
mod life_tests;

#[cfg(test)]
#[path = "drift_tests.rs"]
mod drift_tests;

#[cfg(test)]
#[path = "taskserv_tests.rs"]
mod taskserv_tests;
