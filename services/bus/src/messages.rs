//! Wire messages. Job and runner messages are internal between roles; the event envelope is
//! public (see `nats/subjects.md`).

use std::collections::BTreeMap;

use domain::provisioning::{
    Diagnostic, DriftedResource, JobAction, JobId, JobOutcome, Severity, TaskservReport, VmId,
    VmSpec,
};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

/// The version of [`EventEnvelope`] and of the event subjects this build publishes.
pub const ENVELOPE_VERSION: u32 = 2;

/// A committed event as published on `<prefix>.events.vm.<provider>.<vm_id>.<EventType>` or
/// `<prefix>.events.catalog.<provider>.<EventType>` (see `nats/subjects.md`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EventEnvelope {
    pub version: u32,
    pub aggregate_type: String,
    /// The VM id for `Provisioning` events, `catalog` for `Catalog` events.
    pub aggregate_id: String,
    /// The VM's provider; for a catalog change, the provider it concerns (`null` when it
    /// concerns every provider).
    #[serde(default)]
    pub provider: Option<String>,
    /// The event's place in the commit order of the whole platform (the events table's
    /// `position`).
    #[serde(default)]
    pub position: i64,
    pub sequence: u64,
    #[serde(rename = "type")]
    pub event_type: String,
    /// When the event was committed; RFC 3339 on the wire.
    #[serde(with = "time::serde::rfc3339")]
    pub recorded_at: OffsetDateTime,
    pub actor: Option<String>,
    /// The request whose command recorded the event (its `X-Request-ID`, or the id the
    /// API gave it); the VM id for what runners report.
    #[serde(default)]
    pub correlation_id: Option<String>,
    pub data: serde_json::Value,
}

/// One Terraform job for the dispatcher.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JobMessage {
    pub vm_id: VmId,
    pub job_id: JobId,
    pub action: JobAction,
    pub spec: VmSpec,
}

impl JobMessage {
    /// The `Nats-Msg-Id` of the job queued by the VM's event `sequence`: the relay may
    /// publish one event twice, the stream keeps one; a job queued again (its claim given
    /// up) is a new message.
    pub fn message_id(&self, sequence: u64) -> String {
        format!("job:{}:{}:{sequence}", self.vm_id, self.job_id)
    }
}

/// What a runner says about its job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RunnerReport {
    Started {
        runner: String,
    },
    Log {
        line: u32,
        level: String,
        #[serde(rename = "type")]
        kind: String,
        message: String,
    },
    /// The runner is alive (sent every few seconds, even while Terraform prints nothing);
    /// `beat` counts from 1, so each heartbeat has its own message id.
    Heartbeat {
        beat: u32,
    },
    /// Step `step` of an install job's taskservs (its index in the job's steps) started,
    /// installed or failed.
    Taskserv {
        step: u8,
        report: TaskservReport,
    },
    Result {
        exit_code: i32,
        outputs: BTreeMap<String, serde_json::Value>,
        diagnostics: Vec<Diagnostic>,
        /// How many log lines the runner published before this result.
        #[serde(default)]
        lines: u32,
        /// The resources a refresh found changed outside Terraform, with the names (never
        /// the values) of their changed attributes.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        drift: Vec<DriftedResource>,
    },
}

impl RunnerReport {
    pub fn subject_kind(&self) -> &'static str {
        match self {
            RunnerReport::Started { .. } => "started",
            RunnerReport::Log { .. } => "log",
            RunnerReport::Heartbeat { .. } => "heartbeat",
            RunnerReport::Taskserv { .. } => "taskserv",
            RunnerReport::Result { .. } => "result",
        }
    }
}

impl From<JobOutcome> for RunnerReport {
    fn from(outcome: JobOutcome) -> Self {
        RunnerReport::Result {
            exit_code: outcome.exit_code,
            outputs: outcome.outputs,
            diagnostics: outcome.diagnostics,
            lines: outcome.lines,
            drift: outcome.drift,
        }
    }
}

/// The outcome of a job whose runner is gone without a result (it could not start, it
/// crashed, it fell silent): exit code -1 and `reason` as its one error. The dispatcher
/// reports it as the runner would have; the watchdog records it.
pub fn lost_job(reason: String) -> JobOutcome {
    JobOutcome {
        exit_code: -1,
        outputs: Default::default(),
        diagnostics: vec![Diagnostic {
            severity: Severity::Error,
            summary: reason,
            detail: String::new(),
        }],
        lines: 0,
        drift: vec![],
    }
}

/// A runner report with the job it belongs to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunnerMessage {
    pub vm_id: VmId,
    pub job_id: JobId,
    #[serde(flatten)]
    pub report: RunnerReport,
}

impl RunnerMessage {
    /// Unique per report, so a runner that retries a publish is deduplicated.
    pub fn message_id(&self) -> String {
        let n = match &self.report {
            RunnerReport::Log { line, .. } => *line,
            RunnerReport::Heartbeat { beat } => *beat,
            // Each state of a step is reported once.
            RunnerReport::Taskserv { step, report } => {
                u32::from(*step) * 3
                    + match report {
                        TaskservReport::Started => 0,
                        TaskservReport::Installed { .. } => 1,
                        TaskservReport::Failed { .. } => 2,
                    }
            }
            _ => 0,
        };
        format!(
            "runner:{}:{}:{}:{n}",
            self.vm_id,
            self.job_id,
            self.report.subject_kind()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_taskserv_report_reads_as_the_runner_sends_it_with_an_id_per_step_and_state() {
        let message = RunnerMessage {
            vm_id: VmId::new(),
            job_id: JobId::new(2),
            report: RunnerReport::Taskserv {
                step: 1,
                report: TaskservReport::Installed {
                    outputs: BTreeMap::from([("port".to_owned(), "6379".to_owned())]),
                },
            },
        };
        let json = serde_json::to_value(&message).unwrap();
        assert_eq!(json["kind"], "taskserv");
        assert_eq!(json["step"], 1);
        assert_eq!(json["report"]["state"], "installed");
        assert_eq!(json["report"]["outputs"]["port"], "6379");
        let back: RunnerMessage = serde_json::from_value(json).unwrap();
        assert_eq!(back, message);
        assert!(message.message_id().ends_with(":taskserv:4"));
    }

    #[test]
    fn an_envelope_carries_its_time_as_rfc_3339() {
        let json = serde_json::json!({
            "version": 2,
            "aggregate_type": "Provisioning",
            "aggregate_id": "0b0f6f4e-3f7c-4b1e-9d7a-3c2f1e0d9a8b",
            "provider": "local",
            "position": 812,
            "sequence": 3,
            "type": "JobStarted",
            "recorded_at": "2024-05-01T12:30:45.123456Z",
            "actor": "runner",
            "correlation_id": "job-1",
            "data": {},
        });
        let envelope: EventEnvelope = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(envelope.recorded_at.unix_timestamp(), 1_714_566_645);
        assert_eq!(serde_json::to_value(&envelope).unwrap(), json);
    }
}
