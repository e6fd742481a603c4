//! The cluster's process manager, as a pure function: given the cluster, a summary of
//! each of its nodes' VMs and the time, which actions come next.
//!
//! The application runs it over the commit-order feed (once in the deployment, under a
//! lease): on each event of a cluster or of one of its VMs it loads the cluster, the
//! summaries of the VMs [`watched`] names, calls [`decide`] and carries the actions out in
//! order; then decides again, until nothing is left to do or something must be waited for
//! (a VM's callback, a gate's deadline).
//!
//! Restarting at any point is safe because:
//! - deciding twice on the same inputs gives the same actions, and an action already
//!   reflected in the cluster or its VMs is not decided again (a node requested is not
//!   requested again, a VM being destroyed is not destroyed again);
//! - a node's VM id is derived ([`ClusterId::node_vm`](super::ClusterId::node_vm)): a VM
//!   made before a crash but not recorded yet is asked for again with the same id, which
//!   the VM's aggregate refuses as existing (the application then only records it), and it
//!   is watched, so a rollback destroys it too;
//! - every cluster command records nothing when it is already reflected.
//!
//! Times come from the events (when a role's nodes were requested) and `now`, never from
//! the coordinator's memory.

use std::collections::{BTreeMap, BTreeSet};

use time::{Duration, OffsetDateTime};

use super::aggregate::Cluster;
use super::commands::ClusterCommand;
use super::topology::{GateId, GateSpec, OnFailure};
use super::values::RoleName;
use super::views::ClusterStatus;
use crate::provisioning::{Provisioning, VmId, VmStatus};
use crate::taskservs::{TaskservName, TaskservState};

#[path = "coordinator_gates.rs"]
mod gates;

/// Where a node's VM is, as far as the coordinator cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VmState {
    /// Being made, or made and booting (or not reachable yet).
    Building,
    Running,
    /// Its create failed.
    Failed,
    /// A destroy is asked for or running.
    Destroying,
    Destroyed,
}

/// A node's VM: where it is and which taskservs are installed (health check passed) or
/// failed on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeVm {
    pub state: VmState,
    pub installed: BTreeSet<TaskservName>,
    pub failed: BTreeSet<TaskservName>,
}

impl NodeVm {
    /// The summary of a VM's aggregate; `None` for one that does not exist.
    pub fn of(vm: &Provisioning) -> Option<NodeVm> {
        let life = vm.lifecycle();
        let state = match life.status {
            VmStatus::Unknown => return None,
            VmStatus::Destroyed => VmState::Destroyed,
            VmStatus::DestroyRequested | VmStatus::Destroying => VmState::Destroying,
            _ if life.destroy_to_come() => VmState::Destroying,
            VmStatus::Failed => VmState::Failed,
            VmStatus::Running => VmState::Running,
            VmStatus::Requested
            | VmStatus::Provisioning
            | VmStatus::Provisioned
            | VmStatus::Initializing
            | VmStatus::Unreachable => VmState::Building,
        };
        // A later install of the same taskserv overrides an earlier outcome.
        let mut last: BTreeMap<&TaskservName, &TaskservState> = BTreeMap::new();
        for entry in &life.taskservs {
            last.insert(&entry.step.name, &entry.state);
        }
        let with = |f: fn(&TaskservState) -> bool| {
            last.iter()
                .filter(|(_, s)| f(s))
                .map(|(n, _)| (*n).clone())
                .collect()
        };
        Some(NodeVm {
            state,
            installed: with(|s| matches!(s, TaskservState::Installed { .. })),
            failed: with(|s| matches!(s, TaskservState::Failed { .. } | TaskservState::Skipped)),
        })
    }

    /// Gone, or going: it counts for nothing any more.
    pub fn is_going(&self) -> bool {
        matches!(self.state, VmState::Destroying | VmState::Destroyed)
    }
}

/// What the application does next for a cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Create VM `vm` for node `index` of `role` through the VM use case (so validation,
    /// policy and quotas apply); a VM of that id existing already is success (it was made
    /// before a restart). Then `RecordNode`.
    RequestNode {
        role: RoleName,
        index: u32,
        vm: VmId,
    },
    PassGate {
        gate: GateId,
    },
    FailGate {
        gate: GateId,
        why: String,
    },
    MarkReady,
    StartRollback {
        why: String,
    },
    /// Ask for the destroy of VM `vm` (a VM gone or going already is success).
    DestroyNode {
        vm: VmId,
    },
    /// Record that VM `vm`, no longer used, is destroyed.
    RemoveNode {
        vm: VmId,
    },
    Fail {
        why: String,
    },
    MarkDestroyed,
    /// The scale of `role` to `count` is through.
    CompleteScale {
        role: RoleName,
        count: u32,
    },
}

impl Action {
    /// The cluster command that records the action, with `now` as its time; `None` for
    /// destroying a VM, which the VM's own events record. For `RequestNode`, send it
    /// once the VM is made.
    pub fn command(&self, now: OffsetDateTime) -> Option<ClusterCommand> {
        use Action as A;
        use ClusterCommand as C;
        Some(match self.clone() {
            A::RequestNode { role, index, vm } => C::RecordNode {
                role,
                index,
                vm,
                at: now,
            },
            A::PassGate { gate } => C::PassGate { gate },
            A::FailGate { gate, why } => C::FailGate { gate, why },
            A::MarkReady => C::MarkReady,
            A::StartRollback { why } => C::StartRollback { why },
            A::DestroyNode { .. } => return None,
            A::RemoveNode { vm } => C::RemoveNode { vm },
            A::Fail { why } => C::Fail { why },
            A::MarkDestroyed => C::MarkDestroyed,
            A::CompleteScale { role, count } => C::CompleteScale { role, count },
        })
    }
}

/// The VMs whose summaries [`decide`] reads: the nodes, the retired VMs, and the VM each
/// place of a reached stage gets when it is requested (one made before a restart and not
/// recorded yet must be found, to record it or destroy it).
pub fn watched(cluster: &Cluster) -> Vec<VmId> {
    let mut vms: Vec<VmId> = cluster.nodes().iter().map(|n| n.vm).collect();
    vms.extend(cluster.retired().iter().map(|n| n.vm));
    for (role, index) in places(cluster) {
        if cluster.node(&role, index).is_none() {
            vms.extend(cluster.place_vm(&role, index));
        }
    }
    vms
}

/// The actions that come next for `cluster`, given the summaries of the VMs [`watched`]
/// names (a VM absent from `vms` does not exist) at `now`.
pub fn decide(cluster: &Cluster, vms: &BTreeMap<VmId, NodeVm>, now: OffsetDateTime) -> Vec<Action> {
    match cluster.status() {
        ClusterStatus::Requested | ClusterStatus::Creating => creating(cluster, vms, now),
        ClusterStatus::Ready => ready(cluster, vms, now),
        ClusterStatus::RollingBack => teardown(cluster, vms).unwrap_or_else(|| {
            let why = cluster.failure().unwrap_or("rolled back").to_owned();
            vec![Action::Fail { why }]
        }),
        ClusterStatus::Destroying => {
            teardown(cluster, vms).unwrap_or_else(|| vec![Action::MarkDestroyed])
        }
        ClusterStatus::Unknown | ClusterStatus::Failed | ClusterStatus::Destroyed => vec![],
    }
}

/// Nodes of reached stages not requested yet; gates decided; ready when all is done. A
/// failure first turns into a rollback or a failure, as the template says.
fn creating(cluster: &Cluster, vms: &BTreeMap<VmId, NodeVm>, now: OffsetDateTime) -> Vec<Action> {
    let Some(topology) = cluster.topology() else {
        return vec![];
    };
    if let Some(why) = cluster.failure() {
        let why = why.to_owned();
        return match topology.on_failure {
            OnFailure::Rollback => vec![Action::StartRollback { why }],
            OnFailure::Keep => vec![Action::Fail { why }],
        };
    }
    let mut actions = missing_nodes(cluster);
    let reached = cluster.stages_reached();
    let open: Vec<&GateSpec> = (0..reached)
        .flat_map(|s| topology.gates_of_stage(s))
        .filter(|g| !cluster.gate_passed(&g.id()))
        .collect();
    actions.extend(
        open.iter()
            .filter_map(|g| gates::judge(cluster, g, vms, now)),
    );
    if actions.is_empty() && open.is_empty() && reached == topology.stages.len() {
        actions.push(Action::MarkReady);
    }
    actions
}

/// Nodes added by scaling or replacing are requested; VMs no longer used are destroyed,
/// then removed; a scale whose nodes are through completes, one whose added node failed
/// fails the cluster (its nodes kept).
fn ready(cluster: &Cluster, vms: &BTreeMap<VmId, NodeVm>, now: OffsetDateTime) -> Vec<Action> {
    let mut actions = missing_nodes(cluster);
    for node in cluster.retired() {
        match vms.get(&node.vm).map(|v| v.state) {
            None | Some(VmState::Destroyed) => actions.push(Action::RemoveNode { vm: node.vm }),
            Some(VmState::Destroying) => {}
            Some(_) => actions.push(Action::DestroyNode { vm: node.vm }),
        }
    }
    for scale in cluster.scaling() {
        match gates::judge_scale(cluster, scale, vms, now) {
            Some(fail @ Action::Fail { .. }) => return vec![fail],
            Some(done) => actions.push(done),
            None => {}
        }
    }
    actions
}

/// Destroys every VM the cluster made; `None` once all are gone.
fn teardown(cluster: &Cluster, vms: &BTreeMap<VmId, NodeVm>) -> Option<Vec<Action>> {
    let mut actions = vec![];
    let mut waiting = false;
    let mut seen = BTreeSet::new();
    for vm in watched(cluster) {
        if !seen.insert(vm) {
            continue;
        }
        match vms.get(&vm).map(|v| v.state) {
            None | Some(VmState::Destroyed) => {}
            Some(VmState::Destroying) => waiting = true,
            Some(_) => actions.push(Action::DestroyNode { vm }),
        }
    }
    match actions.is_empty() && !waiting {
        true => None,
        false => Some(actions),
    }
}

/// `RequestNode` for each place of a reached stage that has no node.
fn missing_nodes(cluster: &Cluster) -> Vec<Action> {
    places(cluster)
        .into_iter()
        .filter(|(role, index)| cluster.node(role, *index).is_none())
        .filter_map(|(role, index)| {
            let vm = cluster.place_vm(&role, index)?;
            Some(Action::RequestNode { role, index, vm })
        })
        .collect()
}

/// Every place (role, index) of the stages reached, in stage and role order.
fn places(cluster: &Cluster) -> Vec<(RoleName, u32)> {
    let Some(topology) = cluster.topology() else {
        return vec![];
    };
    topology
        .stages
        .iter()
        .take(cluster.stages_reached())
        .flatten()
        .filter_map(|name| topology.role(name))
        .flat_map(|role| (0..role.count).map(|i| (role.name.clone(), i)))
        .collect()
}

/// When a gate's time runs out: `within_secs` after the last of its role's nodes was
/// requested.
fn deadline(requested: OffsetDateTime, within_secs: u32) -> OffsetDateTime {
    requested + Duration::seconds(i64::from(within_secs))
}

#[cfg(test)]
#[path = "coordinator_tests.rs"]
mod tests;
