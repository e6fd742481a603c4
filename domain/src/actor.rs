//! Who issued a command: stored in every event's metadata.

use serde::{Deserialize, Serialize};

/// Who issued a command. Stored as its lowercase name, the strings events have always held.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Actor {
    /// A person through the API (the admin is the only identity for now).
    Admin,
    /// A runner reporting a job's progress and outcome, through the ingester.
    Runner,
    /// A dispatcher, claiming a queued job to start its runner.
    Dispatcher,
    /// The watchdog, failing a job whose runner went silent or was lost.
    Watchdog,
    /// The platform itself: the expiry sweep (warnings, destroys of expired VMs) and the
    /// boot timeout.
    System,
    /// The VM, calling back from cloud-init or its application with a signed token.
    Vm,
}

impl Actor {
    pub fn as_str(&self) -> &'static str {
        match self {
            Actor::Admin => "admin",
            Actor::Runner => "runner",
            Actor::Dispatcher => "dispatcher",
            Actor::Watchdog => "watchdog",
            Actor::System => "system",
            Actor::Vm => "vm",
        }
    }
}

impl std::fmt::Display for Actor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
