//! The files cloud-init writes for a plan: each step's scripts and `run.sh`, which runs them
//! in order and reports each one to its callbacks (see the crate documentation).

use domain::taskservs::{OnError, PlannedTaskserv};

use crate::render::Rendered;

/// Where a VM keeps its taskservs' scripts, logs and outputs.
pub const BASE_DIR: &str = "/var/lib/provisioning/taskservs";

/// The callback URLs of one step; an empty string sends no report. They carry tokens.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StepCallbacks {
    pub started: String,
    pub installed: String,
    pub failed: String,
}

/// A file for cloud-init's `write_files`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptFile {
    pub path: String,
    pub content: String,
    pub permissions: &'static str,
}

/// The functions of `run.sh`; the steps follow them.
const RUN_SH: &str = include_str!("run.sh");

/// Each step's `install.sh` and `health.sh` under `BASE_DIR/<name>/`, then `BASE_DIR/run.sh`.
/// `rendered` and `callbacks` are by step, as `plan` orders them; a step without callbacks
/// reports nothing. Each step's health timeout is the one [`Catalog::render`] noted in its
/// health script (60 s when there is none).
pub fn driver(
    plan: &[PlannedTaskserv],
    rendered: &[Rendered],
    callbacks: &[StepCallbacks],
) -> Vec<ScriptFile> {
    let timeouts: Vec<u32> = (0..plan.len())
        .map(|i| {
            rendered
                .get(i)
                .and_then(|r| health_timeout(&r.health))
                .unwrap_or(60)
        })
        .collect();
    files(plan, rendered, callbacks, &timeouts)
}

/// The note [`Catalog::render`] puts on a health script's second line.
pub(crate) const TIMEOUT_NOTE: &str = "# Health timeout (seconds): ";

fn health_timeout(script: &str) -> Option<u32> {
    script
        .lines()
        .take(2)
        .find_map(|line| line.strip_prefix(TIMEOUT_NOTE))
        .and_then(|n| n.trim().parse().ok())
}

fn files(
    plan: &[PlannedTaskserv],
    rendered: &[Rendered],
    callbacks: &[StepCallbacks],
    timeouts: &[u32],
) -> Vec<ScriptFile> {
    let file = |path: String, content: String| ScriptFile {
        path,
        content,
        permissions: "0700",
    };
    let mut out = Vec::new();
    let mut run = RUN_SH.to_owned();
    let none = StepCallbacks::default();
    for (i, step) in plan.iter().enumerate() {
        let dir = format!("{BASE_DIR}/{}", step.name);
        if let Some(scripts) = rendered.get(i) {
            out.push(file(format!("{dir}/install.sh"), scripts.install.clone()));
            out.push(file(format!("{dir}/health.sh"), scripts.health.clone()));
        }
        let urls = callbacks.get(i).unwrap_or(&none);
        let on_error = match step.on_error {
            OnError::Stop => "stop",
            OnError::Continue => "continue",
            OnError::Retry => "retry",
        };
        run.push_str(&format!(
            "run_step {} {on_error} {} {} {} {} {} || exit 1\n",
            step.name,
            step.max_retries,
            timeouts[i],
            quoted_url(&urls.started),
            quoted_url(&urls.installed),
            quoted_url(&urls.failed),
        ));
    }
    run.push_str("exit \"$failed_any\"\n");
    out.push(file(format!("{BASE_DIR}/run.sh"), run));
    out
}

/// A URL as one single-quoted shell word, safe inside curl's double-quoted `url = "..."`
/// too: the few characters either would read (quotes, backslash, space, controls) are
/// percent-encoded, which leaves the URL's meaning unchanged.
fn quoted_url(url: &str) -> String {
    let mut word = String::from("'");
    for c in url.chars() {
        match c {
            '\'' | '"' | '\\' | ' ' => word.push_str(&format!("%{:02X}", c as u32)),
            c if c.is_control() => word.push_str(&format!("%{:02X}", c as u32 & 0xff)),
            c => word.push(c),
        }
    }
    word.push('\'');
    word
}
