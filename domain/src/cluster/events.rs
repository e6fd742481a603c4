//! What happened to a cluster. Events are facts: they are never changed, only added.
//!
//! Times the coordinator decides on (a gate's deadline counts from when its role's nodes
//! were requested) are recorded in the events, so a decision depends only on the events
//! and the clock, and a restarted coordinator decides as the one before it would have.

use cqrs_es::DomainEvent;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use super::topology::{GateId, NodeSettings, Topology};
use super::values::{ClusterId, RoleName, TemplateRef};
use crate::identity::UserId;
use crate::provisioning::{ProviderId, VmId};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", content = "data")]
pub enum ClusterEvent {
    /// A user asked for a cluster: the template it is made from, resolved (each role's
    /// count and provider template), on which provider, for whom. `id` is the aggregate's
    /// own, kept so node VM ids can be derived from the events alone.
    ClusterRequested {
        id: ClusterId,
        template: TemplateRef,
        topology: Topology,
        nodes: Box<NodeSettings>,
        provider: ProviderId,
        owner: UserId,
        #[serde(with = "time::serde::rfc3339")]
        at: OffsetDateTime,
    },
    /// The VM of node `index` of `role` was asked for (it exists from now on).
    /// `generation` is how many VMs filled that place before it (see
    /// `ClusterId::node_vm`).
    NodeRequested {
        role: RoleName,
        index: u32,
        generation: u32,
        vm: VmId,
        #[serde(with = "time::serde::rfc3339")]
        at: OffsetDateTime,
    },
    /// A gate of stage `stage` passed: the roles of the next stage may be made.
    GatePassed { stage: u32, gate: GateId },
    /// A gate failed: its time ran out, or too many of its nodes failed.
    GateFailed {
        stage: u32,
        gate: GateId,
        why: String,
    },
    /// Every gate passed: the cluster is usable.
    ClusterReady,
    /// The cluster failed; its nodes are destroyed (after a rollback) or kept.
    ClusterFailed { why: String },
    /// A failure is rolled back: every node made is destroyed, then the cluster fails.
    RollbackStarted { why: String },
    /// The owner asked to destroy the cluster: every node is destroyed, then it is gone.
    ClusterDestroyRequested,
    /// Every node of the cluster is destroyed.
    ClusterDestroyed,
    /// The VM of a node is replaced by a new one (the next generation); the old is
    /// destroyed.
    NodeReplaced {
        role: RoleName,
        index: u32,
        old_vm: VmId,
        new_vm: VmId,
    },
    /// A role's count changed (within its range): nodes are added, or the last ones
    /// destroyed.
    ScaleRequested { role: RoleName, count: u32 },
    /// A VM the cluster no longer uses (scaled away or replaced) is destroyed.
    NodeRemoved {
        role: RoleName,
        index: u32,
        vm: VmId,
    },
    /// The scale of `role` to `count` is done: every node it added passed its role's
    /// gates, or every node it dropped is destroyed.
    ScaleCompleted { role: RoleName, count: u32 },
}

impl ClusterEvent {
    pub fn name(&self) -> &'static str {
        match self {
            ClusterEvent::ClusterRequested { .. } => "ClusterRequested",
            ClusterEvent::NodeRequested { .. } => "NodeRequested",
            ClusterEvent::GatePassed { .. } => "GatePassed",
            ClusterEvent::GateFailed { .. } => "GateFailed",
            ClusterEvent::ClusterReady => "ClusterReady",
            ClusterEvent::ClusterFailed { .. } => "ClusterFailed",
            ClusterEvent::RollbackStarted { .. } => "RollbackStarted",
            ClusterEvent::ClusterDestroyRequested => "ClusterDestroyRequested",
            ClusterEvent::ClusterDestroyed => "ClusterDestroyed",
            ClusterEvent::NodeReplaced { .. } => "NodeReplaced",
            ClusterEvent::ScaleRequested { .. } => "ScaleRequested",
            ClusterEvent::NodeRemoved { .. } => "NodeRemoved",
            ClusterEvent::ScaleCompleted { .. } => "ScaleCompleted",
        }
    }
}

impl DomainEvent for ClusterEvent {
    fn event_type(&self) -> String {
        self.name().to_owned()
    }

    fn event_version(&self) -> String {
        "1.0".to_owned()
    }
}
