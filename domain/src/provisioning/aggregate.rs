use cqrs_es::event_sink::EventSink;
use cqrs_es::Aggregate;
use serde::{Deserialize, Serialize};

use super::commands::{JobOutcome, LogLineIn, ProvisioningCommand};
use super::error::ProvisioningError;
use super::events::{JobAction, ProvisioningEvent, Severity};
use super::lifecycle::{ActiveJob, Lifecycle, VmStatus};
use super::limits;
use super::values::{JobId, VmSpec};
use crate::Decide;

/// One VM: its request and the Terraform jobs run for it. Jobs of one VM never run in
/// parallel: a new job is queued only when no other is active.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Provisioning {
    spec: Option<VmSpec>,
    lifecycle: Lifecycle,
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
        if let ProvisioningEvent::Requested { spec } = event {
            self.spec = Some(spec);
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
}

impl Decide for Provisioning {
    fn decide(
        &self,
        command: ProvisioningCommand,
        _services: &(),
    ) -> Result<Vec<ProvisioningEvent>, ProvisioningError> {
        match command {
            ProvisioningCommand::Request { spec } => self.request(spec),
            ProvisioningCommand::ClaimJob { job_id, dispatcher } => {
                let job = self.active_job(job_id)?;
                if job.dispatched || job.started {
                    return Err(ProvisioningError::JobTaken(job_id));
                }
                Ok(vec![ProvisioningEvent::JobDispatched {
                    job_id,
                    dispatcher,
                }])
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
                let mut events = vec![finish(job, outcome)];
                if self.lifecycle.destroy_pending {
                    events.push(self.queue(self.lifecycle.next_job_id(), JobAction::Destroy)?);
                }
                Ok(events)
            }
            ProvisioningCommand::RequestDestroy => self.request_destroy(),
        }
    }
}

impl Provisioning {
    fn request(&self, spec: VmSpec) -> Result<Vec<ProvisioningEvent>, ProvisioningError> {
        if self.lifecycle.status != VmStatus::Unknown {
            return Err(ProvisioningError::AlreadyRequested);
        }
        Ok(vec![
            ProvisioningEvent::Requested { spec: spec.clone() },
            ProvisioningEvent::JobQueued {
                job_id: JobId::FIRST,
                action: JobAction::Apply,
                spec,
            },
        ])
    }

    fn request_destroy(&self) -> Result<Vec<ProvisioningEvent>, ProvisioningError> {
        match self.lifecycle.status {
            VmStatus::Unknown => Err(ProvisioningError::NotFound),
            s @ (VmStatus::DestroyRequested | VmStatus::Destroying | VmStatus::Destroyed) => {
                Err(ProvisioningError::AlreadyDestroying(s))
            }
            _ => {
                let mut events = vec![ProvisioningEvent::DestroyRequested];
                if self.lifecycle.active_job.is_none() {
                    events.push(self.queue(self.lifecycle.next_job_id(), JobAction::Destroy)?);
                }
                Ok(events)
            }
        }
    }

    fn queue(
        &self,
        job_id: JobId,
        action: JobAction,
    ) -> Result<ProvisioningEvent, ProvisioningError> {
        let spec = self.spec.clone().ok_or(ProvisioningError::NotFound)?;
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

/// The event that ends a job. Diagnostics and the reason are cleaned and cut here
/// ([`limits`]), so a huge or NUL-laden result still makes an event that can be stored and
/// published.
fn finish(job: ActiveJob, outcome: JobOutcome) -> ProvisioningEvent {
    let failed = |reason: String, diagnostics| ProvisioningEvent::Failed {
        job_id: job.id,
        action: job.action,
        reason: limits::clean(reason, limits::MAX_TEXT),
        diagnostics: limits::clean_diagnostics(diagnostics),
    };
    if outcome.exit_code != 0 {
        let reason = outcome
            .diagnostics
            .iter()
            .find(|d| d.severity == Severity::Error)
            .map(|d| match d.detail.is_empty() {
                true => d.summary.clone(),
                false => format!("{}: {}", d.summary, d.detail),
            })
            .unwrap_or_else(|| format!("terraform exited with code {}", outcome.exit_code));
        return failed(reason, outcome.diagnostics);
    }
    match job.action {
        JobAction::Destroy => ProvisioningEvent::Destroyed { job_id: job.id },
        JobAction::Apply => match outcome.outputs.get("vm_ip").and_then(|v| v.as_str()) {
            Some(ip) if !ip.is_empty() => ProvisioningEvent::Applied {
                job_id: job.id,
                vm_ip: ip.to_owned(),
                outputs: outcome.outputs.clone(),
            },
            _ => failed(
                "terraform succeeded but gave no vm_ip output".to_owned(),
                outcome.diagnostics,
            ),
        },
    }
}

#[cfg(test)]
#[path = "aggregate_tests.rs"]
mod tests;
