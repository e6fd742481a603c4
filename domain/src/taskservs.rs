//! Taskservs: services installed on a VM (docker, k3s, postgresql, ...), in dependency
//! order. The catalog of definitions lives in files (crate `taskservs`); what the domain
//! keeps is what a VM asked for and the plan resolved from it, recorded in its events.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::provisioning::ValueError;

/// The name of a taskserv: 1 to 63 lowercase letters, digits and `-`, starting with a
/// letter (`prometheus-node-exporter`). It names a folder, a callback and a Cedar resource.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct TaskservName(String);

impl TaskservName {
    pub fn parse(s: &str) -> Result<Self, ValueError> {
        slug(s, "taskservs", "a taskserv name").map(Self)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for TaskservName {
    type Error = ValueError;

    fn try_from(s: String) -> Result<Self, Self::Error> {
        Self::parse(&s)
    }
}

impl From<TaskservName> for String {
    fn from(name: TaskservName) -> Self {
        name.0
    }
}

impl fmt::Display for TaskservName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// `s` if it is 1 to 63 lowercase letters, digits and `-`, starting with a letter (a name
/// that is a folder, a URL segment and a Cedar id at once); else why not, for `field`.
pub(crate) fn slug(s: &str, field: &'static str, what: &str) -> Result<String, ValueError> {
    let ok = (1..=63).contains(&s.len())
        && s.starts_with(|c: char| c.is_ascii_lowercase())
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    match ok {
        true => Ok(s.to_owned()),
        false => Err(ValueError {
            field,
            reason: format!(
                "{s:?} is not {what}: 1 to 63 lowercase letters, digits and '-', \
                 starting with a letter"
            ),
        }),
    }
}

/// Param values as JSON scalars (string, number, bool), by param name. They are recorded in
/// events: a definition never takes a secret as a param (secrets are made on the VM).
pub type Params = BTreeMap<String, serde_json::Value>;

/// A taskserv a user named in a request, with the params they gave.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskservRequest {
    pub name: TaskservName,
    #[serde(default)]
    pub params: Params,
}

/// What the rest of the plan does when a taskserv fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnError {
    /// The taskservs after it are not run.
    #[default]
    Stop,
    /// The next ones run all the same.
    Continue,
    /// It is run again, up to `max_retries` times, then the plan stops.
    Retry,
}

/// One step of a resolved plan: a taskserv at the version the deployment's catalog had,
/// with every param given (the request's, else the definition's defaults).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlannedTaskserv {
    pub name: TaskservName,
    pub version: String,
    #[serde(default)]
    pub params: Params,
    #[serde(default)]
    pub on_error: OnError,
    #[serde(default)]
    pub max_retries: u8,
    /// Named in the request; `false` when pulled in as another's requirement.
    #[serde(default)]
    pub requested: bool,
}

/// Where a taskserv of a VM's plan is, as its callbacks (or an install job) reported.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum TaskservState {
    /// Planned; not started yet.
    Pending,
    Started,
    /// Its health check passed; with what it reported (a URL, a join token's location).
    Installed {
        outputs: BTreeMap<String, String>,
    },
    Failed {
        exit_code: Option<i32>,
        /// The last lines of its output.
        last_lines: Vec<String>,
    },
    /// Not run: an earlier one failed with `on_error = stop`.
    Skipped,
}

impl TaskservState {
    pub fn as_str(&self) -> &'static str {
        match self {
            TaskservState::Pending => "pending",
            TaskservState::Started => "started",
            TaskservState::Installed { .. } => "installed",
            TaskservState::Failed { .. } => "failed",
            TaskservState::Skipped => "skipped",
        }
    }

    /// Whether nothing more comes for it.
    pub fn is_over(&self) -> bool {
        matches!(
            self,
            TaskservState::Installed { .. } | TaskservState::Failed { .. } | TaskservState::Skipped
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn taskserv_names_are_folder_and_url_safe() {
        for good in ["k3s", "prometheus-node-exporter", "a"] {
            assert!(TaskservName::parse(good).is_ok(), "{good}");
        }
        for bad in ["", "K3s", "3d", "a/b", "../x", "a b", &"a".repeat(64)] {
            let err = TaskservName::parse(bad).unwrap_err();
            assert_eq!(err.field, "taskservs", "{bad}");
        }
    }

    #[test]
    fn a_plan_step_of_an_earlier_shape_reads_with_defaults() {
        let step: PlannedTaskserv =
            serde_json::from_value(serde_json::json!({"name": "redis", "version": "1.0.0"}))
                .unwrap();
        assert_eq!(step.on_error, OnError::Stop);
        assert!(step.params.is_empty() && !step.requested);
    }
}
