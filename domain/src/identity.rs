//! Who a caller is: a user's id and role. The users themselves live in Postgres; this is
//! what the domain knows of them.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// What a user may do beyond their own VMs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Sees and acts on their own VMs only.
    User,
    /// Sees every VM and may use `/api/v1/admin/*`.
    Admin,
    /// An admin who may also make other users super admins.
    SuperAdmin,
}

impl Role {
    pub fn as_str(&self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Admin => "admin",
            Role::SuperAdmin => "super_admin",
        }
    }

    /// Admin and super admin.
    pub fn is_admin(&self) -> bool {
        matches!(self, Role::Admin | Role::SuperAdmin)
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown role {0:?}: one of user, admin, super_admin")]
pub struct UnknownRole(pub String);

impl FromStr for Role {
    type Err = UnknownRole;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "user" => Ok(Role::User),
            "admin" => Ok(Role::Admin),
            "super_admin" => Ok(Role::SuperAdmin),
            other => Err(UnknownRole(other.to_owned())),
        }
    }
}

/// A user's id, the `users` row's primary key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct UserId(Uuid);

impl UserId {
    /// The built-in admin, the holder of the admin token (`admin@localhost`). VMs requested
    /// before owners were recorded belong to it.
    pub const BUILTIN_ADMIN: UserId = UserId(Uuid::from_u128(1));

    pub fn new(id: Uuid) -> Self {
        Self(id)
    }

    pub fn random() -> Self {
        Self(Uuid::new_v4())
    }

    pub fn as_uuid(&self) -> Uuid {
        self.0
    }
}

impl From<Uuid> for UserId {
    fn from(id: Uuid) -> Self {
        Self(id)
    }
}

impl fmt::Display for UserId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl FromStr for UserId {
    type Err = uuid::Error;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Uuid::parse_str(s).map(Self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_read_back_from_their_names() {
        for role in [Role::User, Role::Admin, Role::SuperAdmin] {
            assert_eq!(role.as_str().parse::<Role>(), Ok(role));
        }
        assert!("root".parse::<Role>().is_err());
    }

    #[test]
    fn admins_and_super_admins_are_admins_and_users_are_not() {
        assert!(!Role::User.is_admin());
        assert!(Role::Admin.is_admin());
        assert!(Role::SuperAdmin.is_admin());
    }

    #[test]
    fn a_user_id_serializes_as_its_uuid() {
        let json = serde_json::to_string(&UserId::BUILTIN_ADMIN).unwrap();
        assert_eq!(json, "\"00000000-0000-0000-0000-000000000001\"");
    }
}
