//! How a cluster reads to its users: its status and a summary folded from its state, for
//! the read model and the API to map onto their own types.

use serde::{Deserialize, Serialize};

use super::aggregate::{Cluster, Node};
use super::topology::GateId;
use super::values::RoleName;

/// Where a cluster is in its life.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClusterStatus {
    /// No `ClusterRequested` yet: the cluster does not exist.
    #[default]
    Unknown,
    Requested,
    /// Its nodes are being made, stage by stage.
    Creating,
    Ready,
    Failed,
    RollingBack,
    Destroying,
    Destroyed,
}

impl ClusterStatus {
    pub fn as_str(&self) -> &'static str {
        match self {
            ClusterStatus::Unknown => "unknown",
            ClusterStatus::Requested => "requested",
            ClusterStatus::Creating => "creating",
            ClusterStatus::Ready => "ready",
            ClusterStatus::Failed => "failed",
            ClusterStatus::RollingBack => "rolling_back",
            ClusterStatus::Destroying => "destroying",
            ClusterStatus::Destroyed => "destroyed",
        }
    }
}

/// Where a gate is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum GateState {
    Pending,
    Passed,
    Failed { why: String },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GateView {
    pub gate: GateId,
    pub stage: u32,
    pub state: GateState,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoleView {
    pub name: RoleName,
    pub count: u32,
    pub min: u32,
    pub max: u32,
}

/// A cluster as `GET /api/v1/clusters/{id}` shows it, less what comes from its nodes'
/// VMs (their status and addresses), which the read model joins.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterView {
    pub status: ClusterStatus,
    pub roles: Vec<RoleView>,
    pub nodes: Vec<Node>,
    pub gates: Vec<GateView>,
    pub failure: Option<String>,
}

impl Cluster {
    pub fn view(&self) -> ClusterView {
        let Some(topology) = self.topology() else {
            return ClusterView {
                status: self.status(),
                roles: vec![],
                nodes: vec![],
                gates: vec![],
                failure: None,
            };
        };
        let gates = topology
            .gates
            .iter()
            .map(|g| {
                let gate = g.id();
                let state = match (self.gate_passed(&gate), self.gate_failure(&gate)) {
                    (true, _) => GateState::Passed,
                    (false, Some(why)) => GateState::Failed { why: why.into() },
                    (false, None) => GateState::Pending,
                };
                let stage = topology.stage_of(&g.role).unwrap_or(0);
                GateView {
                    gate,
                    stage: u32::try_from(stage).unwrap_or(u32::MAX),
                    state,
                }
            })
            .collect();
        ClusterView {
            status: self.status(),
            roles: topology
                .roles
                .iter()
                .map(|r| RoleView {
                    name: r.name.clone(),
                    count: r.count,
                    min: r.min,
                    max: r.max,
                })
                .collect(),
            nodes: self.nodes().to_vec(),
            gates,
            failure: self.failure().map(str::to_owned),
        }
    }
}
