//! Who issued a command: stored in every event's metadata.

use serde::{Deserialize, Serialize};

use crate::identity::UserId;

/// Who issued a command. Stored as its name ([`Actor::name`]): `user:<uuid>` for a user,
/// otherwise the lowercase name of the role, the strings events have always held.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Actor {
    /// The holder of the admin token (the built-in admin), through the API.
    Admin,
    /// A user through the API (signed in, or with a personal API token), by id.
    User(UserId),
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
    /// The kind of actor: `user` for every user (see [`Actor::name`] for which one).
    pub fn as_str(&self) -> &'static str {
        match self {
            Actor::Admin => "admin",
            Actor::User(_) => "user",
            Actor::Runner => "runner",
            Actor::Dispatcher => "dispatcher",
            Actor::Watchdog => "watchdog",
            Actor::System => "system",
            Actor::Vm => "vm",
        }
    }

    /// What events record: `user:<uuid>` for a user, the kind for the others.
    pub fn name(&self) -> String {
        match self {
            Actor::User(id) => format!("user:{id}"),
            other => other.as_str().to_owned(),
        }
    }
}

impl std::fmt::Display for Actor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_user_is_recorded_by_id_and_the_platform_by_role() {
        let user = UserId::new(uuid::Uuid::from_u128(0xabc));
        assert_eq!(
            Actor::User(user).name(),
            "user:00000000-0000-0000-0000-000000000abc"
        );
        assert_eq!(Actor::Admin.name(), "admin");
        assert_eq!(Actor::Watchdog.to_string(), "watchdog");
    }
}
