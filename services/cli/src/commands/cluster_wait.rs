//! A cluster's events: `cluster events` (the history, from `GET
//! /api/v1/clusters/{id}/events`; with `-f` its stream, live), and `--wait` of create,
//! scale and destroy, which print each event as a line until the cluster gets where the
//! command leads (exit 3 when it fails instead).

use serde_json::Value;

use crate::args::Format;
use crate::client::Api;
use crate::error::CliError;
use crate::follow::{follow_stream, Step, Verdict};
use crate::output::short_id;
use crate::waiting::{follow_until, show_settled, Following};
use crate::wire::{read, Cluster, Event};

use super::cluster::{details, resolve};

/// Events a page of `GET /api/v1/clusters/{id}/events` holds at most.
const PAGE: usize = 1000;

/// What `--wait` waits for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Goal {
    Ready,
    Destroyed,
    /// The scale of `role` to `to` nodes completed (`ScaleCompleted`).
    Scaled {
        role: String,
        to: u32,
    },
}

/// Reads a cluster's events, from its first or from before the command's own, for one
/// goal.
pub struct Watch {
    goal: Goal,
    /// For a scale: its `ScaleRequested` was seen.
    armed: bool,
}

impl Watch {
    pub fn new(goal: Goal) -> Watch {
        Watch { goal, armed: false }
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
            (Goal::Scaled { role, to }, "ScaleRequested" | "ScaleCompleted") => {
                if event.text("role") != Some(role) {
                    return Verdict::Going;
                }
                let ours = count(event, "count") == Some(*to);
                match (kind, ours, self.armed) {
                    ("ScaleRequested", true, _) => {
                        self.armed = true;
                        Verdict::Going
                    }
                    ("ScaleRequested", false, true) => Verdict::Failed(format!(
                        "a later scale of role {role} to {} took its place",
                        count(event, "count").map_or("?".to_owned(), |c| c.to_string())
                    )),
                    ("ScaleCompleted", true, true) => Verdict::Succeeded,
                    _ => Verdict::Going,
                }
            }
            (Goal::Scaled { .. }, "ClusterFailed") if self.armed => Verdict::Failed(why(event)),
            (Goal::Scaled { .. }, "ClusterDestroyRequested") if self.armed => {
                Verdict::Failed("the cluster is being destroyed".into())
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
        "ScaleRequested" | "ScaleCompleted" => format!(
            "{kind} {} to {}",
            text("role"),
            count(event, "count").map_or("?".to_owned(), |c| c.to_string())
        ),
        _ => kind.to_owned(),
    }
}

/// Follows `cluster`'s stream (after sequence `after`, or from its first) until `goal` is
/// reached, printing each event on stderr, then prints the cluster as it is; exit 3 if it
/// failed.
pub async fn wait(
    api: &Api,
    format: Format,
    cluster: &Cluster,
    after: Option<u64>,
    goal: Goal,
) -> Result<(), CliError> {
    let id = &cluster.id;
    eprintln!(
        "{} {} ({id}): following its events",
        cluster.name,
        short_id(id.as_str())
    );
    let mut watch = Watch::new(goal.clone());
    let on_interrupt = format!(
        "Stopped waiting; the cluster goes on (nothing was cancelled). Follow it again \
         with `provisioning cluster events {id} -f`"
    );
    let following = Following {
        path: format!("/api/v1/clusters/{id}/stream"),
        after,
        status: format!("cluster {}: {}", cluster.name, cluster.status),
        on_interrupt: &on_interrupt,
    };
    let failure = follow_until(api, following, |event, progress| {
        let line = describe(event);
        progress.say(&format!("  {line}"));
        progress.status(&line);
        watch.see(event)
    })
    .await?;
    let settled: &[&str] = match (&failure, &goal) {
        (Some(_), _) => &["failed", "destroyed", "rolling_back", "ready", "destroying"],
        (None, Goal::Ready | Goal::Scaled { .. }) => &["ready"],
        (None, Goal::Destroyed) => &["destroyed"],
    };
    let path = format!("/api/v1/clusters/{id}");
    let status = |cluster: &Cluster| cluster.status.clone();
    show_settled(api, format, &path, "cluster", settled, status, details).await?;
    match failure {
        Some(reason) => Err(CliError::JobFailed(format!("the cluster failed: {reason}"))),
        None => Ok(()),
    }
}

/// The cluster's events after sequence `after`, in order, every page of them.
pub async fn history(api: &Api, id: &str, mut after: u64) -> Result<Vec<Value>, CliError> {
    let path = format!("/api/v1/clusters/{id}/events");
    let mut all = vec![];
    loop {
        let query = [("after", after.to_string()), ("limit", PAGE.to_string())];
        let page: Vec<Value> = read(&api.get(&path, &query).await?, "event list")?;
        let full = page.len() == PAGE;
        if let Some(last) = page.last().and_then(|e| e["sequence"].as_u64()) {
            after = last;
        }
        all.extend(page);
        if !full {
            return Ok(all);
        }
    }
}

/// `cluster events [-f]`: every event of the cluster from its first, one a line (one JSON
/// object a line with `-o json`); with `follow`, then live until Ctrl-C.
pub async fn events(api: &Api, format: Format, arg: &str, follow: bool) -> Result<(), CliError> {
    let id = resolve(api, arg).await?;
    let print = |event: &Event| match format {
        Format::Table => println!("{}", describe(event)),
        Format::Json | Format::Yaml => println!(
            "{}",
            serde_json::json!({"type": event.kind, "data": event.data})
        ),
    };
    if !follow {
        for value in history(api, id.as_str(), 0).await? {
            print(&read::<Event>(&value, "event")?);
        }
        return Ok(());
    }
    let path = format!("/api/v1/clusters/{id}/stream");
    let followed = follow_stream(api, &path, |event| {
        print(event);
        Step::Continue
    });
    tokio::select! {
        result = followed => result,
        _ = tokio::signal::ctrl_c() => Ok(()),
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
    fn a_scale_waits_for_its_own_completion_and_fails_when_replaced_or_failed() {
        let goal = Goal::Scaled {
            role: "agent".into(),
            to: 3,
        };
        let asked = |count: u32| event("ScaleRequested", json!({"role": "agent", "count": count}));
        let done = |count: u32| event("ScaleCompleted", json!({"role": "agent", "count": count}));
        let mut watch = Watch::new(goal.clone());
        assert_eq!(watch.see(&done(3)), Verdict::Going, "before its request");
        assert_eq!(watch.see(&asked(3)), Verdict::Going);
        assert_eq!(watch.see(&done(1)), Verdict::Going, "another scale's");
        assert_eq!(watch.see(&done(3)), Verdict::Succeeded);

        let mut watch = Watch::new(goal.clone());
        watch.see(&asked(3));
        assert_eq!(
            watch.see(&asked(1)),
            Verdict::Failed("a later scale of role agent to 1 took its place".into())
        );
        let mut watch = Watch::new(goal);
        watch.see(&asked(3));
        assert_eq!(
            watch.see(&event("ClusterFailed", json!({"why": "k3s failed"}))),
            Verdict::Failed("k3s failed".into())
        );
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
