use cqrs_es::event_sink::EventSink;
use cqrs_es::Aggregate;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use super::commands::ClusterCommand;
use super::error::ClusterError;
use super::events::ClusterEvent;
use super::topology::{GateId, NodeSettings, Topology};
use super::values::{ClusterId, RoleName, TemplateRef};
use super::views::ClusterStatus;
use crate::identity::UserId;
use crate::provisioning::{ProviderId, VmId};
use crate::Decide;

#[path = "transitions.rs"]
mod transitions;

/// Several VMs made as one. The cluster records which nodes it asked for and which gates
/// passed; each node is an ordinary `Provisioning` aggregate whose id the cluster derives
/// (`ClusterId::node_vm`). What to do next is decided by `coordinator::decide` from this
/// state and the nodes' VMs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Cluster {
    requested: Option<Requested>,
    status: ClusterStatus,
    /// The nodes in use, in the order they were requested.
    nodes: Vec<Node>,
    /// VMs no longer used (scaled away, replaced) until they are destroyed and removed.
    retired: Vec<Node>,
    /// The generation of each place's next VM; a place not listed starts at 0.
    next_generation: Vec<(RoleName, u32, u32)>,
    passed: Vec<GateId>,
    failed: Vec<(GateId, String)>,
    /// Why the cluster fails (the first failed gate, a rollback) or failed.
    failure: Option<String>,
    /// The scales asked for and not completed yet, one a role (a later scale of a role
    /// takes the place of an earlier one).
    #[serde(default)]
    scaling: Vec<Scaling>,
}

/// A scale in progress: `role` goes from `from` nodes to `to`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Scaling {
    pub role: RoleName,
    pub from: u32,
    pub to: u32,
}

/// What `ClusterRequested` recorded; `topology`'s counts follow scaling.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Requested {
    pub id: ClusterId,
    pub template: TemplateRef,
    pub topology: Topology,
    pub nodes: Box<NodeSettings>,
    pub provider: ProviderId,
    pub owner: UserId,
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
}

/// A node: the VM filling place `index` of `role`, and when it was asked for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Node {
    pub role: RoleName,
    pub index: u32,
    pub generation: u32,
    pub vm: VmId,
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
}

impl Aggregate for Cluster {
    const TYPE: &'static str = "Cluster";
    type Command = ClusterCommand;
    type Event = ClusterEvent;
    type Error = ClusterError;
    type Services = ();

    async fn handle(
        &mut self,
        command: Self::Command,
        _services: &Self::Services,
        sink: &EventSink<Self>,
    ) -> Result<(), Self::Error> {
        for event in Decide::decide(self, command, &())? {
            sink.write(event, self).await;
        }
        Ok(())
    }

    fn apply(&mut self, event: Self::Event) {
        use ClusterEvent as E;
        match event {
            E::ClusterRequested {
                id,
                template,
                topology,
                nodes,
                provider,
                owner,
                at,
            } => {
                self.requested = Some(Requested {
                    id,
                    template,
                    topology,
                    nodes,
                    provider,
                    owner,
                    at,
                });
                self.status = ClusterStatus::Requested;
            }
            E::NodeRequested {
                role,
                index,
                generation,
                vm,
                at,
            } => {
                self.nodes.retain(|n| !(n.role == role && n.index == index));
                self.set_next_generation(&role, index, generation + 1);
                self.nodes.push(Node {
                    role,
                    index,
                    generation,
                    vm,
                    at,
                });
                if self.status == ClusterStatus::Requested {
                    self.status = ClusterStatus::Creating;
                }
            }
            E::GatePassed { gate, .. } => self.passed.push(gate),
            E::GateFailed { gate, why, .. } => {
                self.failure.get_or_insert_with(|| why.clone());
                self.failed.push((gate, why));
            }
            E::ClusterReady => self.status = ClusterStatus::Ready,
            E::ClusterFailed { why } => {
                self.failure = Some(why);
                self.status = ClusterStatus::Failed;
                self.scaling.clear();
            }
            E::RollbackStarted { why } => {
                self.failure = Some(why);
                self.status = ClusterStatus::RollingBack;
            }
            E::ClusterDestroyRequested => {
                self.status = ClusterStatus::Destroying;
                self.scaling.clear();
            }
            E::ClusterDestroyed => self.status = ClusterStatus::Destroyed,
            E::NodeReplaced { role, index, .. } => {
                self.retire(|n| n.role == role && n.index == index)
            }
            E::ScaleRequested { role, count } => {
                let mut from = count;
                if let Some(r) = self
                    .topology_mut()
                    .and_then(|t| t.roles.iter_mut().find(|r| r.name == role))
                {
                    from = r.count;
                    r.count = count;
                }
                self.retire(|n| n.role == role && n.index >= count);
                self.scaling.retain(|s| s.role != role);
                self.scaling.push(Scaling {
                    role,
                    from,
                    to: count,
                });
            }
            E::NodeRemoved { vm, .. } => self.retired.retain(|n| n.vm != vm),
            E::ScaleCompleted { role, count } => {
                self.scaling.retain(|s| !(s.role == role && s.to == count))
            }
        }
    }
}

impl Decide for Cluster {
    fn decide(
        &self,
        command: ClusterCommand,
        _services: &(),
    ) -> Result<Vec<ClusterEvent>, ClusterError> {
        use ClusterCommand as C;
        match command {
            C::Request {
                id,
                template,
                topology,
                nodes,
                provider,
                owner,
                at,
            } => self.request(Requested {
                id,
                template,
                topology,
                nodes,
                provider,
                owner,
                at,
            }),
            C::RecordNode {
                role,
                index,
                vm,
                at,
            } => self.record_node(role, index, vm, at),
            C::PassGate { gate } => self.pass_gate(gate),
            C::FailGate { gate, why } => self.fail_gate(gate, why),
            C::MarkReady => self.mark_ready(),
            C::Fail { why } => self.fail(why),
            C::StartRollback { why } => self.start_rollback(why),
            C::RequestDestroy => self.request_destroy(),
            C::MarkDestroyed => self.mark_destroyed(),
            C::Scale { role, count } => self.scale(role, count),
            C::ReplaceNode { role, index } => self.replace_node(role, index),
            C::RemoveNode { vm } => self.remove_node(vm),
            C::CompleteScale { role, count } => self.complete_scale(role, count),
        }
    }
}

impl Cluster {
    pub fn status(&self) -> ClusterStatus {
        self.status
    }

    /// What was requested, once it was.
    pub fn requested(&self) -> Option<&Requested> {
        self.requested.as_ref()
    }

    pub fn topology(&self) -> Option<&Topology> {
        self.requested.as_ref().map(|r| &r.topology)
    }

    /// The nodes in use, in the order they were requested.
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// VMs the cluster no longer uses, until they are destroyed and removed.
    pub fn retired(&self) -> &[Node] {
        &self.retired
    }

    /// The scales in progress, one a role.
    pub fn scaling(&self) -> &[Scaling] {
        &self.scaling
    }

    pub fn node(&self, role: &RoleName, index: u32) -> Option<&Node> {
        self.nodes
            .iter()
            .find(|n| n.role == *role && n.index == index)
    }

    pub fn gate_passed(&self, gate: &GateId) -> bool {
        self.passed.contains(gate)
    }

    /// Why the gate failed, if it did.
    pub fn gate_failure(&self, gate: &GateId) -> Option<&str> {
        self.failed
            .iter()
            .find(|(g, _)| g == gate)
            .map(|(_, why)| why.as_str())
    }

    /// Why the cluster fails or failed.
    pub fn failure(&self) -> Option<&str> {
        self.failure.as_deref()
    }

    /// How many stages are reached: stage `k` is when every gate of the stages before it
    /// passed. Its roles' nodes may be requested.
    pub fn stages_reached(&self) -> usize {
        let Some(topology) = self.topology() else {
            return 0;
        };
        let mut reached = 0;
        while reached < topology.stages.len() {
            reached += 1;
            let open = topology
                .gates_of_stage(reached - 1)
                .all(|g| self.gate_passed(&g.id()));
            if !open {
                break;
            }
        }
        reached
    }

    /// The VM id node `index` of `role` has, or gets when it is requested.
    pub fn place_vm(&self, role: &RoleName, index: u32) -> Option<VmId> {
        if let Some(node) = self.node(role, index) {
            return Some(node.vm);
        }
        let id = self.requested.as_ref()?.id;
        Some(id.node_vm(role, index, self.generation(role, index)))
    }

    /// The generation the next VM of a place gets.
    fn generation(&self, role: &RoleName, index: u32) -> u32 {
        self.next_generation
            .iter()
            .find(|(r, i, _)| r == role && *i == index)
            .map_or(0, |(_, _, g)| *g)
    }

    fn set_next_generation(&mut self, role: &RoleName, index: u32, generation: u32) {
        self.next_generation
            .retain(|(r, i, _)| !(r == role && *i == index));
        self.next_generation.push((role.clone(), index, generation));
    }

    fn topology_mut(&mut self) -> Option<&mut Topology> {
        self.requested.as_mut().map(|r| &mut r.topology)
    }

    /// Moves the matching nodes to the retired ones.
    fn retire(&mut self, matches: impl Fn(&Node) -> bool) {
        let (gone, kept) = std::mem::take(&mut self.nodes)
            .into_iter()
            .partition(|n| matches(n));
        self.nodes = kept;
        self.retired.extend::<Vec<Node>>(gone);
    }
}

#[cfg(test)]
#[path = "aggregate_tests.rs"]
mod tests;
