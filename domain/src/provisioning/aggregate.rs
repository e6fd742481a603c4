use cqrs_es::event_sink::EventSink;
use cqrs_es::Aggregate;
use serde::{Deserialize, Serialize};

use super::boot;
use super::commands::{JobOutcome, ProvisioningCommand};
use super::error::ProvisioningError;
use super::events::{JobAction, ProvisioningEvent};
use super::expiry;
use super::lifecycle::{Lifecycle, VmStatus};
use super::values::{JobId, VmSpec};
use crate::Decide;

#[path = "install.rs"]
mod install;
#[path = "job_control.rs"]
mod job_control;

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
                job_control::new_lines(job, lines)
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

    /// Only a destroyed VM is archived; archiving it again changes nothing.
    fn archive(&self) -> Result<Vec<ProvisioningEvent>, ProvisioningError> {
        match self.lifecycle.status {
            VmStatus::Unknown => Err(ProvisioningError::NotFound),
            VmStatus::Destroyed if self.archived => Ok(vec![]),
            VmStatus::Destroyed => Ok(vec![ProvisioningEvent::Archived]),
            status => Err(ProvisioningError::NotDestroyed(status)),
        }
    }
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
