//! The resolved shape of a cluster, as the aggregate needs it: each role with its count
//! and range, the stages, the gates and what a failure does.
//!
//! The `clusters` crate loads templates (Nickel files) and checks them; the application
//! resolves a request against one into a [`Topology`]. The domain keeps its own shape so
//! it depends on no template loader, and so an event keeps what was resolved when the
//! cluster was requested, whatever the file says later.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::error::ClusterError;
use super::values::RoleName;
use crate::provisioning::{Cidr, DurationHours, SshPublicKey, TemplateId, VmName};
use crate::taskservs::{TaskservName, TaskservRequest};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Topology {
    pub roles: Vec<RoleSpec>,
    /// Stages, each a list of role names, in the order they are made.
    pub stages: Vec<Vec<RoleName>>,
    pub gates: Vec<GateSpec>,
    pub on_failure: OnFailure,
}

/// A role resolved for one cluster: how many nodes it has now, the range scaling may
/// choose within (`min == max` for a fixed count) and the provider template its VMs use.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoleSpec {
    pub name: RoleName,
    pub count: u32,
    pub min: u32,
    pub max: u32,
    pub template: TemplateId,
    /// The taskservs each node gets, params as the template writes them: references to
    /// earlier roles' outputs are rendered when a node is requested.
    #[serde(default)]
    pub taskservs: Vec<TaskservRequest>,
}

/// What every node of a cluster is made with, beside its role's template and taskservs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeSettings {
    /// The cluster's name; node `i` of role `r` is named `<name>-<r>-<i>`.
    pub name: VmName,
    pub ssh_public_key: SshPublicKey,
    pub allow_ssh_from: Vec<Cidr>,
    pub duration_hours: DurationHours,
}

/// A stage waits until `taskserv` is installed (its health check passed) on `nodes` of
/// `role`'s nodes, at most `within_secs` after the last of them was requested.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GateSpec {
    pub role: RoleName,
    pub taskserv: TaskservName,
    pub nodes: GateNodes,
    pub within_secs: u32,
}

/// How many of a role's nodes a gate waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GateNodes {
    All,
    Count(u32),
}

impl GateNodes {
    /// How many nodes must have the taskserv installed, of a role of `count` nodes.
    pub fn needed(self, count: u32) -> u32 {
        match self {
            GateNodes::All => count,
            GateNodes::Count(n) => n.min(count),
        }
    }
}

/// What a cluster whose gate fails does with the nodes made so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnFailure {
    /// Destroy every node made; the cluster ends failed.
    Rollback,
    /// Keep the nodes for inspection; the cluster ends failed.
    Keep,
}

/// A gate's name within its cluster: the role and the taskserv it waits for.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct GateId {
    pub role: RoleName,
    pub taskserv: TaskservName,
}

impl GateSpec {
    pub fn id(&self) -> GateId {
        GateId {
            role: self.role.clone(),
            taskserv: self.taskserv.clone(),
        }
    }
}

impl Topology {
    pub fn role(&self, name: &RoleName) -> Option<&RoleSpec> {
        self.roles.iter().find(|r| r.name == *name)
    }

    /// The stage (index in `stages`) of a role.
    pub fn stage_of(&self, role: &RoleName) -> Option<usize> {
        self.stages.iter().position(|s| s.contains(role))
    }

    /// The gates on the roles of stage `stage`.
    pub fn gates_of_stage(&self, stage: usize) -> impl Iterator<Item = &GateSpec> {
        self.gates
            .iter()
            .filter(move |g| self.stage_of(&g.role) == Some(stage))
    }

    pub fn gate(&self, id: &GateId) -> Option<&GateSpec> {
        self.gates
            .iter()
            .find(|g| g.role == id.role && g.taskserv == id.taskserv)
    }

    /// Checks what the template loader checks too, as far as the aggregate relies on it:
    /// roles unique, each in exactly one stage, counts within their ranges, gates on known
    /// roles, one gate per role and taskserv, none waiting for more nodes than its role has.
    pub fn validate(&self) -> Result<(), ClusterError> {
        let bad = |reason: String| Err(ClusterError::InvalidTopology(reason));
        let mut names = BTreeSet::new();
        for role in &self.roles {
            if !names.insert(&role.name) {
                return bad(format!("role {} is defined twice", role.name));
            }
            if role.min > role.max || role.count < role.min || role.count > role.max {
                return bad(format!(
                    "role {}: {} nodes is outside its range {} to {}",
                    role.name, role.count, role.min, role.max
                ));
            }
            let stages = self.stages.iter().filter(|s| s.contains(&role.name));
            if stages.count() != 1 {
                return bad(format!("role {} must be in exactly one stage", role.name));
            }
        }
        for stage in &self.stages {
            if let Some(unknown) = stage.iter().find(|r| self.role(r).is_none()) {
                return bad(format!("role {unknown} is in a stage but not defined"));
            }
            if stage.len() != stage.iter().collect::<BTreeSet<_>>().len() {
                return bad("a stage names a role twice".into());
            }
        }
        let mut gates = BTreeSet::new();
        for gate in &self.gates {
            let Some(role) = self.role(&gate.role) else {
                return bad(format!("a gate waits for role {}, not defined", gate.role));
            };
            if !gates.insert(gate.id()) {
                return bad(format!(
                    "role {} has two gates on {}",
                    gate.role, gate.taskserv
                ));
            }
            if let GateNodes::Count(n) = gate.nodes {
                if n > role.count {
                    return bad(format!(
                        "role {}: a gate waits for {n} nodes, more than its {}",
                        gate.role, role.count
                    ));
                }
            }
        }
        Ok(())
    }
}
