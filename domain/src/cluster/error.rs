use super::topology::GateId;
use super::values::RoleName;
use super::views::ClusterStatus;
use crate::provisioning::VmId;

/// Why a cluster command was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClusterError {
    #[error("no such cluster")]
    NotFound,
    #[error("the cluster was requested already")]
    AlreadyRequested,
    #[error("the cluster's topology is invalid: {0}")]
    InvalidTopology(String),
    /// The command does not apply to a cluster in this status.
    #[error("a cluster that is {} cannot {action}", .status.as_str())]
    InvalidTransition {
        status: ClusterStatus,
        action: &'static str,
    },
    #[error("the cluster has no role {0}")]
    UnknownRole(RoleName),
    #[error("role {role} has no node {index}")]
    UnknownNode { role: RoleName, index: u32 },
    #[error("role {role}: its stage is not reached yet (gates before it have not passed)")]
    StageNotReached { role: RoleName },
    #[error("node {index} of role {role} is VM {expected}, not {got}")]
    WrongVm {
        role: RoleName,
        index: u32,
        expected: VmId,
        got: VmId,
    },
    #[error("role {role}: {count} nodes is outside its range {min} to {max}")]
    OutOfRange {
        role: RoleName,
        count: u32,
        min: u32,
        max: u32,
    },
    #[error("the cluster has no gate on {} of role {}", .0.taskserv, .0.role)]
    UnknownGate(GateId),
    #[error("the gate on {} of role {} was decided already", .0.taskserv, .0.role)]
    GateDecided(GateId),
    #[error("not every node is made and every gate passed yet")]
    NotComplete,
    /// A VM still in use cannot be removed; replace the node or scale it away first.
    #[error("VM {0} is one of the cluster's nodes")]
    InUse(VmId),
}
