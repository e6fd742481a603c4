//! The install directory the dispatcher prepares for an install job, and the runner reads:
//! `plan.json` (this), `known_hosts` (the VM's pinned host keys) and each step's scripts.

use domain::taskservs::{OnError, TaskservName};
use serde::{Deserialize, Serialize};

pub const PLAN_FILE: &str = "plan.json";
pub const KNOWN_HOSTS_FILE: &str = "known_hosts";

/// What an install job does: its steps, in order, on one VM.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InstallPlan {
    pub target: Target,
    pub steps: Vec<InstallStep>,
}

/// Where the VM is reached over SSH.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Target {
    pub address: String,
    pub port: u16,
    pub user: String,
}

impl Target {
    /// How `known_hosts` names the host: `address`, or `[address]:port` off port 22.
    pub fn host_pattern(&self) -> String {
        match self.port {
            22 => self.address.clone(),
            port => format!("[{}]:{port}", self.address),
        }
    }
}

/// One taskserv of the job, with its scripts in the directory beside the plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InstallStep {
    pub name: TaskservName,
    pub version: String,
    pub on_error: OnError,
    pub max_retries: u8,
    /// How long its health check may keep failing after install.
    pub health_timeout_secs: u32,
}

/// The file of step `index`'s install script.
pub fn install_file(index: usize) -> String {
    format!("step-{index}-install.sh")
}

/// The file of step `index`'s health script.
pub fn health_file(index: usize) -> String {
    format!("step-{index}-health.sh")
}
