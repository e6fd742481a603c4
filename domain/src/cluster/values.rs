//! Identifiers of a cluster and of its nodes, parsed once at the boundary.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::provisioning::{ValueError, VmId};

/// The id of a cluster, which is also the id of its `Cluster` aggregate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ClusterId(Uuid);

impl ClusterId {
    pub fn new() -> Self {
        Self(Uuid::new_v4())
    }

    pub fn as_uuid(&self) -> Uuid {
        self.0
    }

    /// The id of the VM of node `index` of `role`, the `generation`-th VM to fill that
    /// place (0 first; a replaced node, or one scaled away and back, takes the next).
    ///
    /// A UUID v5 in the cluster's id as namespace, so it depends on nothing but the
    /// cluster's events: a coordinator that is redelivered an event, or restarted between
    /// making a VM and recording it, asks for the same VM again, and the VM's aggregate
    /// refuses a second create of an id it has. That is what keeps a node from being made
    /// twice; no lookup or lock is needed.
    pub fn node_vm(&self, role: &RoleName, index: u32, generation: u32) -> VmId {
        let name = format!("{}/{index}/{generation}", role.as_str());
        VmId::from(Uuid::new_v5(&self.0, name.as_bytes()))
    }
}

impl Default for ClusterId {
    fn default() -> Self {
        Self::new()
    }
}

impl From<Uuid> for ClusterId {
    fn from(id: Uuid) -> Self {
        Self(id)
    }
}

impl FromStr for ClusterId {
    type Err = ValueError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Uuid::parse_str(s).map(Self).map_err(|_| ValueError {
            field: "id",
            reason: "must be a UUID".into(),
        })
    }
}

impl fmt::Display for ClusterId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// The name of a role of a cluster template: 1 to 63 lowercase letters, digits and `-`,
/// starting with a letter (`server`, `agent`), as the template's contract allows.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct RoleName(String);

impl RoleName {
    pub fn parse(s: &str) -> Result<Self, ValueError> {
        crate::taskservs::slug(s, "role", "a role name").map(Self)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for RoleName {
    type Error = ValueError;

    fn try_from(s: String) -> Result<Self, Self::Error> {
        RoleName::parse(&s)
    }
}

impl From<RoleName> for String {
    fn from(r: RoleName) -> Self {
        r.0
    }
}

impl fmt::Display for RoleName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The place of a VM in a cluster: recorded in the VM's spec, so the VM's events name it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterMember {
    pub id: ClusterId,
    pub role: RoleName,
    pub index: u32,
}

/// Which template a cluster was made from: its registry name and the hash of its content
/// when the cluster was requested, so a later edit of the file is told apart.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TemplateRef {
    pub name: String,
    pub version: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_vm_id_depends_only_on_the_cluster_role_index_and_generation() {
        let cluster = ClusterId::from(Uuid::from_u128(7));
        let server = RoleName::parse("server").unwrap();
        let agent = RoleName::parse("agent").unwrap();
        let first = cluster.node_vm(&server, 0, 0);
        assert_eq!(first, cluster.node_vm(&server, 0, 0));
        assert_ne!(first, cluster.node_vm(&server, 1, 0));
        assert_ne!(first, cluster.node_vm(&server, 0, 1));
        assert_ne!(first, cluster.node_vm(&agent, 0, 0));
        assert_ne!(
            first,
            ClusterId::from(Uuid::from_u128(8)).node_vm(&server, 0, 0)
        );
    }

    #[test]
    fn role_names_are_lowercase_words() {
        assert!(RoleName::parse("control-plane").is_ok());
        assert!(RoleName::parse("Server").is_err());
        assert!(RoleName::parse("").is_err());
        assert!(RoleName::parse("a/b").is_err());
    }
}
