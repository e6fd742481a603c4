//! Following a cluster's stream (`GET /api/v1/clusters/{id}/stream`): `cluster events
//! [-f]`, and `--wait` of create, scale and destroy, which print each event as a line until
//! the cluster gets where the command leads (exit 3 when it fails instead).

use std::cell::Cell;
use std::time::Duration;

use tokio::time::Instant;

use crate::args::Format;
use crate::client::Api;
use crate::error::CliError;
use crate::follow::{follow_stream, Step};
use crate::output::{self, short_id};
use crate::progress::Progress;
use crate::wire::{read, Cluster, Event, VmId};

use super::cluster::{details, resolve};

/// Without `-f`, `cluster events` stops once the stream has been quiet this long: the
/// backlog comes at once, so this is the history so far.
const QUIET: Duration = Duration::from_secs(2);
/// How long the read model may take to show what the stream told.
const SETTLING: Duration = Duration::from_secs(5);

/// What `--wait` waits for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Goal {
    Ready,
    Destroyed,
    /// The nodes a scale adds are requested, or those it drops removed.
    Scaled {
        role: String,
        from: u32,
        to: u32,
    },
}

/// How the awaited change stands after an event.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    Going,
    Succeeded,
    Failed(String),
}

/// Reads a cluster's events, from its first, for one goal.
pub struct Watch {
    goal: Goal,
    /// For a scale: its `ScaleRequested` was seen; the nodes it touches seen since.
    armed: bool,
    touched: u32,
}

impl Watch {
    pub fn new(goal: Goal) -> Watch {
        Watch {
            goal,
            armed: false,
            touched: 0,
        }
    }

    pub fn see(&mut self, event: &Event) -> Verdict {
        let kind = event.kind.as_str();
        match (&self.goal, kind) {
            (Goal::Ready, "ClusterReady") | (Goal::Destroyed, "ClusterDestroyed") => {
                Verdict::Succeeded
            }
            (Goal::Ready, "ClusterFailed") => Verdict::Failed(why(event)),
            (Goal::Ready, "ClusterDestroyed") => {
                Verdict::Failed("it was destroyed before it was ready".into())
            }
            (Goal::Scaled { role, to, .. }, "ScaleRequested") => {
                // The last scale to this count is this command's: an earlier one's nodes
                // are counted again from here.
                if event.text("role") == Some(role) && count(event, "count") == Some(*to) {
                    self.armed = true;
                    self.touched = 0;
                }
                self.scaled()
            }
            (Goal::Scaled { role, from, to }, "NodeRequested" | "NodeRemoved") if self.armed => {
                let index = count(event, "index").unwrap_or(u32::MAX);
                let ours = if kind == "NodeRequested" {
                    (*from..*to).contains(&index)
                } else {
                    (*to..*from).contains(&index)
                };
                if event.text("role") == Some(role) && ours {
                    self.touched += 1;
                }
                self.scaled()
            }
            (Goal::Scaled { .. }, "ClusterFailed") if self.armed => Verdict::Failed(why(event)),
            _ => Verdict::Going,
        }
    }

    fn scaled(&self) -> Verdict {
        match &self.goal {
            Goal::Scaled { from, to, .. } if self.armed && self.touched >= from.abs_diff(*to) => {
                Verdict::Succeeded
            }
            _ => Verdict::Going,
        }
    }
}

fn why(event: &Event) -> String {
    event.text("why").unwrap_or("no reason given").to_owned()
}

fn count(event: &Event, field: &str) -> Option<u32> {
    event.data.get(field)?.as_u64().map(|n| n as u32)
}

/// An event as one line: its type and what it is about.
pub fn describe(event: &Event) -> String {
    let kind = event.kind.as_str();
    let text = |field: &str| event.text(field).unwrap_or("?").to_owned();
    let node = || {
        let index = count(event, "index").map_or("?".to_owned(), |i| i.to_string());
        format!("{}[{index}]", text("role"))
    };
    let gate = || {
        let gate = &event.data["gate"];
        format!(
            "{}/{} (stage {})",
            gate["role"].as_str().unwrap_or("?"),
            gate["taskserv"].as_str().unwrap_or("?"),
            count(event, "stage").map_or("?".to_owned(), |s| s.to_string())
        )
    };
    match kind {
        "ClusterRequested" => format!(
            "{kind} {} on {}",
            event.data["template"]["name"].as_str().unwrap_or("?"),
            text("provider")
        ),
        "NodeRequested" | "NodeRemoved" => format!("{kind} {} (VM {})", node(), text("vm")),
        "NodeReplaced" => format!(
            "{kind} {} (VM {} by {})",
            node(),
            text("old_vm"),
            text("new_vm")
        ),
        "GatePassed" => format!("{kind} {}", gate()),
        "GateFailed" => format!("{kind} {}: {}", gate(), why(event)),
        "ClusterFailed" | "RollbackStarted" => format!("{kind}: {}", why(event)),
        "ScaleRequested" => format!(
            "{kind} {} to {}",
            text("role"),
            count(event, "count").map_or("?".to_owned(), |c| c.to_string())
        ),
        _ => kind.to_owned(),
    }
}

/// Follows `cluster`'s stream until `goal` is reached, printing each event on stderr,
/// then prints the cluster as it is; exit 3 if it failed.
pub async fn wait(
    api: &Api,
    format: Format,
    cluster: &Cluster,
    goal: Goal,
) -> Result<(), CliError> {
    let id = &cluster.id;
    eprintln!(
        "{} {} ({id}): following its events",
        cluster.name,
        short_id(id.as_str())
    );
    let mut watch = Watch::new(goal.clone());
    let mut failure = None;
    let mut progress = Progress::start(&format!("cluster {}: {}", cluster.name, cluster.status));
    let path = format!("/api/v1/clusters/{id}/stream");
    let followed = follow_stream(api, &path, |event| {
        let line = describe(event);
        progress.say(&format!("  {line}"));
        progress.status(&line);
        match watch.see(event) {
            Verdict::Going => Step::Continue,
            Verdict::Succeeded => Step::Done(Ok(())),
            Verdict::Failed(reason) => {
                failure = Some(reason);
                Step::Done(Ok(()))
            }
        }
    });
    let interrupted = tokio::select! {
        result = followed => {
            result?;
            false
        }
        _ = tokio::signal::ctrl_c() => true,
    };
    progress.finish();
    if interrupted {
        eprintln!(
            "Stopped waiting; the cluster goes on (nothing was cancelled). Follow it again \
             with `provisioning cluster events {id} -f`"
        );
        return Err(CliError::Interrupted);
    }
    let settled: &[&str] = match (&failure, &goal) {
        (Some(_), _) => &["failed", "destroyed", "rolling_back"],
        (None, Goal::Ready) => &["ready"],
        (None, Goal::Destroyed) => &["destroyed"],
        (None, Goal::Scaled { .. }) => &["ready"],
    };
    show_settled(api, format, id, settled).await?;
    match failure {
        Some(reason) => Err(CliError::JobFailed(format!("the cluster failed: {reason}"))),
        None => Ok(()),
    }
}

/// Prints the cluster once `GET` shows it in one of the `settled` statuses (its read model
/// follows the events a moment later), or as it is after [`SETTLING`].
async fn show_settled(
    api: &Api,
    format: Format,
    id: &VmId,
    settled: &[&str],
) -> Result<(), CliError> {
    let deadline = Instant::now() + SETTLING;
    loop {
        let value = api.get(&format!("/api/v1/clusters/{id}"), &[]).await?;
        let cluster: Cluster = read(&value, "cluster")?;
        if settled.contains(&cluster.status.as_str()) || Instant::now() >= deadline {
            return output::print(format, &value, |_| Ok(details(&cluster)));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// `cluster events [-f]`: every event of the cluster from its first, one a line (one JSON
/// object a line with `-o json`); with `follow`, live until Ctrl-C.
pub async fn events(api: &Api, format: Format, arg: &str, follow: bool) -> Result<(), CliError> {
    let id = resolve(api, arg).await?;
    let path = format!("/api/v1/clusters/{id}/stream");
    let last = Cell::new(Instant::now());
    let followed = follow_stream(api, &path, |event| {
        last.set(Instant::now());
        match format {
            Format::Table => println!("{}", describe(event)),
            Format::Json | Format::Yaml => println!(
                "{}",
                serde_json::json!({"type": event.kind, "data": event.data})
            ),
        }
        Step::Continue
    });
    tokio::pin!(followed);
    loop {
        tokio::select! {
            result = &mut followed => return result,
            _ = tokio::signal::ctrl_c() => return Ok(()),
            _ = tokio::time::sleep(Duration::from_millis(200)), if !follow => {
                if last.get().elapsed() >= QUIET {
                    return Ok(());
                }
            }
        }
    }
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
    fn events_read_as_lines_naming_their_node_or_gate() {
        let node = event(
            "NodeRequested",
            json!({"role": "server", "index": 0, "generation": 0, "vm": "v1"}),
        );
        assert_eq!(describe(&node), "NodeRequested server[0] (VM v1)");
        let gate = event(
            "GatePassed",
            json!({"stage": 0, "gate": {"role": "server", "taskserv": "k3s"}}),
        );
        assert_eq!(describe(&gate), "GatePassed server/k3s (stage 0)");
        assert_eq!(
            describe(&event("ClusterReady", json!(null))),
            "ClusterReady"
        );
    }

    #[test]
    fn a_create_waits_for_ready_and_fails_with_the_clusters_reason() {
        let mut watch = Watch::new(Goal::Ready);
        assert_eq!(
            watch.see(&event("NodeRequested", json!({}))),
            Verdict::Going
        );
        assert_eq!(
            watch.see(&event("ClusterFailed", json!({"why": "gate timed out"}))),
            Verdict::Failed("gate timed out".into())
        );
        assert_eq!(
            Watch::new(Goal::Ready).see(&event("ClusterReady", json!(null))),
            Verdict::Succeeded
        );
    }

    #[test]
    fn a_scale_waits_for_the_nodes_it_adds_after_its_own_request() {
        let goal = Goal::Scaled {
            role: "agent".into(),
            from: 1,
            to: 3,
        };
        let mut watch = Watch::new(goal);
        let node = |i: u32| event("NodeRequested", json!({"role": "agent", "index": i}));
        assert_eq!(watch.see(&node(1)), Verdict::Going, "before its request");
        let asked = event("ScaleRequested", json!({"role": "agent", "count": 3}));
        assert_eq!(watch.see(&asked), Verdict::Going);
        assert_eq!(watch.see(&node(0)), Verdict::Going, "not one it adds");
        assert_eq!(watch.see(&node(1)), Verdict::Going);
        assert_eq!(watch.see(&node(2)), Verdict::Succeeded);
    }

    #[test]
    fn a_destroy_ignores_an_earlier_failure() {
        let mut watch = Watch::new(Goal::Destroyed);
        assert_eq!(
            watch.see(&event("ClusterFailed", json!({"why": "x"}))),
            Verdict::Going
        );
        assert_eq!(
            watch.see(&event("ClusterDestroyed", json!(null))),
            Verdict::Succeeded
        );
    }
}
