//! Who calls a use case, and in which request: what every command records in its events'
//! metadata (the actor and the correlation id), whichever face it came through.

use std::net::IpAddr;

use domain::identity::{Role, UserId};
use domain::Actor;

/// An authenticated user, as the faces found them (their role is the database's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    pub user: UserId,
    pub email: String,
    pub role: Role,
    pub groups: Vec<String>,
}

impl Principal {
    pub fn is_admin(&self) -> bool {
        self.role.is_admin()
    }

    /// Whether the caller may see (and act on) what `owner` owns: their own, or anything
    /// for an admin. What the caller may not see is answered as if it did not exist.
    pub fn may_see(&self, owner: &UserId) -> bool {
        self.is_admin() || self.user == *owner
    }

    /// Who the caller's commands name in their events: `admin` for the admin token's
    /// holder (as before users existed), `user:<uuid>` for every user.
    pub fn actor(&self) -> Actor {
        match self.user {
            UserId::BUILTIN_ADMIN => Actor::Admin,
            user => Actor::User(user),
        }
    }

    /// What owns the SSH keys the caller registers: the user's id.
    pub fn owner_key(&self) -> String {
        self.user.to_string()
    }
}

/// The caller's address, as far as the face can tell; why not, if it cannot. Only `me`
/// (in a VM's `allow_ssh_from`) needs it, so a request without one fails only when it says
/// `me`.
#[derive(Debug, Clone)]
pub struct ClientAddr(pub Result<IpAddr, String>);

/// A call of a use case: who, in which request (the correlation id the face was given or
/// made), and from where.
#[derive(Debug, Clone)]
pub struct Caller {
    pub principal: Principal,
    pub request_id: String,
    pub client_addr: ClientAddr,
}

impl Caller {
    /// What the caller's commands record with their events.
    pub fn metadata(&self) -> store::Metadata {
        store::Metadata::new(self.principal.actor(), self.request_id.clone())
    }
}
