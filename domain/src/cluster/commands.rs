//! What users and the cluster's coordinator ask of a cluster.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use super::topology::{GateId, NodeSettings, Topology};
use super::values::{ClusterId, RoleName, TemplateRef};
use crate::identity::UserId;
use crate::provisioning::{ProviderId, VmId};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ClusterCommand {
    /// Make a cluster of `topology` (resolved from `template` by the application). `id`
    /// must be the aggregate's id.
    Request {
        id: ClusterId,
        template: TemplateRef,
        topology: Topology,
        nodes: Box<NodeSettings>,
        provider: ProviderId,
        owner: UserId,
        at: OffsetDateTime,
    },
    /// The coordinator made node `index` of `role` as VM `vm` at `at`. The same node
    /// again records nothing (a redelivery, or a restart after the VM was made).
    RecordNode {
        role: RoleName,
        index: u32,
        vm: VmId,
        at: OffsetDateTime,
    },
    PassGate {
        gate: GateId,
    },
    FailGate {
        gate: GateId,
        why: String,
    },
    MarkReady,
    /// The cluster fails (after its rollback, or at once when it keeps its nodes).
    Fail {
        why: String,
    },
    /// Roll a failure back: destroy every node made.
    StartRollback {
        why: String,
    },
    RequestDestroy,
    /// Every node's VM is destroyed.
    MarkDestroyed,
    /// Give `role` `count` nodes, within its range.
    Scale {
        role: RoleName,
        count: u32,
    },
    /// Replace the VM of node `index` of `role` by a new one.
    ReplaceNode {
        role: RoleName,
        index: u32,
    },
    /// A VM the cluster no longer uses is destroyed.
    RemoveNode {
        vm: VmId,
    },
    /// The scale of `role` to `count` is done (the coordinator saw its nodes through).
    CompleteScale {
        role: RoleName,
        count: u32,
    },
}
