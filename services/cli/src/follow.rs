//! Following a VM's stream (`GET /api/v1/vms/{id}/stream`) for `--wait` and `logs -f`, and
//! a cluster's (`GET /api/v1/clusters/{id}/stream`) the same way:
//! every event once, in order, across dropped connections (resumed with `Last-Event-ID`,
//! and events at or before the last one seen skipped), until the caller has what it waits
//! for.

use std::time::Duration;

use futures::StreamExt;

use crate::client::Api;
use crate::error::CliError;
use crate::sse::{Message, Parser};
use crate::wire::{Event, VmId};

/// What the caller of [`follow`] does after an event.
pub enum Step {
    Continue,
    Done(Result<(), CliError>),
}

/// Connections in a row that may fail (refused, or dropped before any event) before
/// following gives up: about half a minute with the backoff below.
const ATTEMPTS: u32 = 10;

/// Follows `vm`'s events from its first, calling `on_event` with each exactly once, until it
/// says it is done.
pub async fn follow(
    api: &Api,
    vm: &VmId,
    on_event: impl FnMut(&Event) -> Step,
) -> Result<(), CliError> {
    follow_stream(api, &format!("/api/v1/vms/{vm}/stream"), on_event).await
}

/// Follows the stream at `path` from its first event, calling `on_event` with each exactly
/// once, until it says it is done.
pub async fn follow_stream(
    api: &Api,
    path: &str,
    on_event: impl FnMut(&Event) -> Step,
) -> Result<(), CliError> {
    follow_stream_after(api, path, None, on_event).await
}

/// As [`follow_stream`], from the event after sequence `after` (from the first with `None`).
pub async fn follow_stream_after(
    api: &Api,
    path: &str,
    after: Option<u64>,
    mut on_event: impl FnMut(&Event) -> Step,
) -> Result<(), CliError> {
    let mut last: Option<u64> = after;
    let mut failures = 0;
    loop {
        let dropped = match api.stream(path, last).await {
            Ok(response) => {
                let mut parser = Parser::default();
                let mut body = response.bytes_stream();
                loop {
                    let bytes = match body.next().await {
                        Some(Ok(bytes)) => bytes,
                        Some(Err(e)) => break CliError::network(api.base(), &e),
                        None => break CliError::network(api.base(), &StreamEnded),
                    };
                    for message in parser.feed(&bytes) {
                        match message.event.as_str() {
                            "end" => ended(&message)?,
                            "reconnect" => continue,
                            _ => {}
                        }
                        let Some(id) = message.id.as_deref().and_then(|id| id.parse().ok()) else {
                            continue;
                        };
                        if last.is_some_and(|last| id <= last) {
                            continue;
                        }
                        last = Some(id);
                        failures = 0;
                        let event: Event = serde_json::from_str(&message.data).map_err(|e| {
                            CliError::Local(format!("an event of the stream is unreadable: {e}"))
                        })?;
                        if let Step::Done(result) = on_event(&event) {
                            return result;
                        }
                    }
                }
            }
            Err(e @ CliError::Network { .. }) => e,
            Err(e) => return Err(e),
        };
        failures += 1;
        if failures > ATTEMPTS {
            return Err(dropped);
        }
        if api.verbose() {
            let after = last.map_or("its start".to_owned(), |id| format!("event {id}"));
            let cause = match &dropped {
                CliError::Network { cause, .. } => cause.clone(),
                other => other.to_string(),
            };
            eprintln!("stream dropped ({cause}); resuming after {after}");
        }
        tokio::time::sleep(backoff(failures)).await;
    }
}

/// The platform closed the stream (it stops, say): resumed like a dropped one.
#[derive(Debug, thiserror::Error)]
#[error("the platform closed the stream")]
struct StreamEnded;

/// `event: end`: the platform closed the stream because the caller's rights ended. A
/// changed role is worth a reconnect; a revoked credential or a disabled user is not.
fn ended(message: &Message) -> Result<(), CliError> {
    let body: serde_json::Value = serde_json::from_str(&message.data).unwrap_or_default();
    let reason = body["reason"].as_str().unwrap_or("unknown");
    let detail = body["detail"].as_str().unwrap_or(reason);
    match reason {
        "role_changed" => Ok(()),
        _ => Err(CliError::NotSignedIn(format!(
            "the platform ended the stream: {detail}"
        ))),
    }
}

fn backoff(failures: u32) -> Duration {
    Duration::from_millis(200 * 2u64.pow(failures.min(5))).min(Duration::from_secs(5))
}

/// What `--wait` waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Goal {
    /// The create job applied: the VM is `provisioned` (a `local` VM goes on to `running`
    /// by itself; a cloud VM once it phones home).
    Provisioned,
    Destroyed,
    /// An install job on a running VM ended, every taskserv installed.
    Installed,
}

/// How the awaited job stands after an event.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    Going,
    Succeeded,
    Failed(String),
}

/// Reads a VM's events for one job (`job`, the create or the destroy a command asked for):
/// the status each gives the VM, and whether the job is over.
pub struct Watch {
    job: u32,
    goal: Goal,
    shown: Option<String>,
    /// The first taskserv of an install job that failed, and how.
    failed: Option<String>,
}

impl Watch {
    pub fn new(job: u32, goal: Goal) -> Watch {
        Watch {
            job,
            goal,
            shown: None,
            failed: None,
        }
    }

    /// The status line to print, when `event` changed it, and the verdict.
    pub fn see(&mut self, event: &Event) -> (Option<String>, Verdict) {
        let ours = event.job_id() == Some(self.job);
        let (status, verdict) = match (event.kind.as_str(), self.goal) {
            ("Requested", Goal::Provisioned) => ("requested".to_owned(), Verdict::Going),
            ("DestroyRequested", Goal::Destroyed) => {
                ("destroy_requested".to_owned(), Verdict::Going)
            }
            ("JobStarted", Goal::Provisioned) if ours => {
                ("provisioning".to_owned(), Verdict::Going)
            }
            ("JobStarted", Goal::Destroyed) if ours => ("destroying".to_owned(), Verdict::Going),
            ("Applied", Goal::Provisioned) if ours => {
                let ip = event.text("vm_ip").unwrap_or("-");
                (format!("provisioned (ip {ip})"), Verdict::Succeeded)
            }
            ("Destroyed", Goal::Destroyed) if ours => ("destroyed".to_owned(), Verdict::Succeeded),
            ("JobStarted", Goal::Installed) if ours => ("installing".to_owned(), Verdict::Going),
            ("TaskservStarted", Goal::Installed) if ours => {
                let name = event.text("name").unwrap_or("?");
                (format!("installing {name}"), Verdict::Going)
            }
            ("TaskservInstalled", Goal::Installed) if ours => {
                let name = event.text("name").unwrap_or("?");
                let version = event.text("version").unwrap_or("?");
                (format!("installed {name} {version}"), Verdict::Going)
            }
            ("TaskservFailed", Goal::Installed) if ours => {
                let name = event.text("name").unwrap_or("?");
                let exit = event.data["exit_code"]
                    .as_i64()
                    .map_or_else(|| "no exit code".to_owned(), |c| format!("exit code {c}"));
                let line = format!("{name} failed ({exit})");
                self.failed.get_or_insert_with(|| line.clone());
                (line, Verdict::Going)
            }
            ("InstallEnded", Goal::Installed) if ours => match &self.failed {
                Some(failed) => ("install ended".to_owned(), Verdict::Failed(failed.clone())),
                None => ("install ended".to_owned(), Verdict::Succeeded),
            },
            ("Failed" | "JobCancelled", _) if ours => {
                let reason = event.text("reason").unwrap_or("no reason given").to_owned();
                let verb = if event.kind == "Failed" {
                    "failed"
                } else {
                    "cancelled"
                };
                (format!("{verb}: {reason}"), Verdict::Failed(reason))
            }
            _ => return (None, Verdict::Going),
        };
        if self.shown.as_ref() == Some(&status) {
            return (None, verdict);
        }
        self.shown = Some(status.clone());
        (Some(status), verdict)
    }
}

/// The events that end a job, whatever its action.
pub fn ends_job(event: &Event) -> bool {
    matches!(
        event.kind.as_str(),
        "Applied" | "Refreshed" | "Failed" | "JobCancelled" | "Destroyed" | "InstallEnded"
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn event(kind: &str, data: serde_json::Value) -> Event {
        Event {
            kind: kind.into(),
            data,
        }
    }

    #[test]
    fn an_install_is_followed_taskserv_by_taskserv_and_fails_if_one_did() {
        let events = |second: Event| {
            [
                event("TaskservsRequested", json!({"job_id": 2})),
                event("JobStarted", json!({"job_id": 2})),
                event("TaskservStarted", json!({"job_id": 2, "name": "docker"})),
                event(
                    "TaskservInstalled",
                    json!({"job_id": 2, "name": "docker", "version": "1.0.0"}),
                ),
                event("TaskservStarted", json!({"job_id": 1, "name": "redis"})),
                second,
                event("InstallEnded", json!({"job_id": 2})),
            ]
        };
        let mut watch = Watch::new(2, Goal::Installed);
        let installed = json!({"job_id": 2, "name": "grafana", "version": "2.0.0"});
        let seen: Vec<_> = events(event("TaskservInstalled", installed))
            .iter()
            .map(|e| watch.see(e))
            .collect();
        let lines: Vec<_> = seen.iter().filter_map(|(l, _)| l.clone()).collect();
        assert_eq!(
            lines,
            [
                "installing",
                "installing docker",
                "installed docker 1.0.0",
                "installed grafana 2.0.0",
                "install ended"
            ]
        );
        assert_eq!(seen.last().unwrap().1, Verdict::Succeeded);

        let mut watch = Watch::new(2, Goal::Installed);
        let failed = json!({"job_id": 2, "name": "grafana", "exit_code": 7, "last_lines": []});
        let verdicts: Vec<_> = events(event("TaskservFailed", failed))
            .iter()
            .map(|e| watch.see(e).1)
            .collect();
        assert_eq!(
            verdicts.last().unwrap(),
            &Verdict::Failed("grafana failed (exit code 7)".into())
        );
    }

    #[test]
    fn a_create_is_followed_to_provisioned_with_each_status_once() {
        let mut watch = Watch::new(1, Goal::Provisioned);
        let seen: Vec<_> = [
            event("Requested", json!({})),
            event("JobQueued", json!({"job_id": 1})),
            event("JobStarted", json!({"job_id": 1})),
            event("LogLine", json!({"job_id": 1, "message": "x"})),
            event("Applied", json!({"job_id": 1, "vm_ip": "10.0.0.1"})),
        ]
        .iter()
        .map(|e| watch.see(e))
        .collect();
        let lines: Vec<_> = seen.iter().filter_map(|(l, _)| l.clone()).collect();
        assert_eq!(
            lines,
            ["requested", "provisioning", "provisioned (ip 10.0.0.1)"]
        );
        assert_eq!(seen.last().unwrap().1, Verdict::Succeeded);
    }

    #[test]
    fn a_destroy_ignores_the_earlier_jobs_and_fails_with_its_reason() {
        let mut watch = Watch::new(2, Goal::Destroyed);
        assert_eq!(
            watch.see(&event("Failed", json!({"job_id": 1, "reason": "old"}))),
            (None, Verdict::Going)
        );
        let (line, verdict) = watch.see(&event("Failed", json!({"job_id": 2, "reason": "boom"})));
        assert_eq!(line.as_deref(), Some("failed: boom"));
        assert_eq!(verdict, Verdict::Failed("boom".into()));
    }
}
