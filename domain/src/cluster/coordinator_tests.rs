//! The coordinator's decisions, as given / when / then: a cluster and its VMs as given,
//! the actions decided, and the world after they are carried out.

use std::collections::{BTreeMap, BTreeSet};

use cqrs_es::Aggregate;
use time::{Duration, OffsetDateTime};

use super::*;
use crate::cluster::fixtures::*;
use crate::cluster::{ClusterCommand, ClusterEvent, OnFailure};
use crate::Decide;

#[path = "coordinator_props.rs"]
mod props;
#[path = "coordinator_scale_tests.rs"]
mod scale;

/// A cluster and its VMs, as the application would see them; `step` decides and carries
/// the actions out as the application would.
pub(super) struct World {
    pub cluster: Cluster,
    pub vms: BTreeMap<VmId, NodeVm>,
}

impl World {
    pub fn new(on_failure: OnFailure) -> World {
        World::requested(request(on_failure))
    }

    pub fn requested(request: ClusterCommand) -> World {
        let mut world = World {
            cluster: Cluster::default(),
            vms: BTreeMap::new(),
        };
        world.command(request);
        world
    }

    pub fn command(&mut self, command: ClusterCommand) -> Vec<ClusterEvent> {
        let events = self.cluster.decide(command, &()).unwrap();
        for event in events.clone() {
            self.cluster.apply(event);
        }
        events
    }

    pub fn decide(&self, now: OffsetDateTime) -> Vec<Action> {
        decide(&self.cluster, &self.vms, now)
    }

    pub fn carry_out(&mut self, actions: &[Action], now: OffsetDateTime) {
        for action in actions {
            match action {
                Action::RequestNode { vm, .. } => {
                    self.vms.entry(*vm).or_insert_with(building);
                }
                Action::DestroyNode { vm } => {
                    if let Some(v) = self.vms.get_mut(vm) {
                        v.state = VmState::Destroying;
                    }
                }
                _ => {}
            }
            if let Some(command) = action.command(now) {
                self.command(command);
            }
        }
    }

    pub fn step(&mut self, now: OffsetDateTime) -> Vec<Action> {
        let actions = self.decide(now);
        self.carry_out(&actions, now);
        actions
    }

    pub fn install(&mut self, vm: VmId) {
        let v = self.vms.get_mut(&vm).unwrap();
        v.state = VmState::Running;
        v.installed.insert(k3s());
    }

    pub fn fail_install(&mut self, vm: VmId) {
        self.vms.get_mut(&vm).unwrap().failed.insert(k3s());
    }

    /// Every destroy asked for ends.
    pub fn destroys_end(&mut self) {
        for v in self.vms.values_mut() {
            if v.state == VmState::Destroying {
                v.state = VmState::Destroyed;
            }
        }
    }
}

pub(super) fn building() -> NodeVm {
    NodeVm {
        state: VmState::Building,
        installed: BTreeSet::new(),
        failed: BTreeSet::new(),
    }
}

fn request_node(on: &str, index: u32) -> Action {
    Action::RequestNode {
        role: role(on),
        index,
        vm: vm(on, index),
    }
}

fn destroy(on: &str, index: u32) -> Action {
    Action::DestroyNode { vm: vm(on, index) }
}

/// A cluster whose server is made and has k3s, its gate passed, and whose workers were
/// requested at `T0`.
fn workers_requested(on_failure: OnFailure) -> World {
    let mut world = World::new(on_failure);
    world.step(T0);
    world.install(vm("server", 0));
    world.step(T0);
    assert_eq!(
        world.step(T0),
        vec![request_node("worker", 0), request_node("worker", 1)]
    );
    world
}

#[test]
fn a_requested_cluster_asks_for_its_first_stages_nodes_with_derived_ids() {
    let world = World::new(OnFailure::Rollback);
    assert_eq!(world.decide(T0), vec![request_node("server", 0)]);
    assert_eq!(watched(&world.cluster), vec![vm("server", 0)]);
}

#[test]
fn a_requested_node_is_not_requested_again_and_its_gate_waits() {
    let mut world = World::new(OnFailure::Rollback);
    world.step(T0);
    assert_eq!(world.cluster.status(), ClusterStatus::Creating);
    assert_eq!(world.decide(T0 + Duration::minutes(1)), vec![]);
}

#[test]
fn a_vm_made_before_a_restart_but_not_recorded_is_asked_for_again_with_the_same_id() {
    let mut world = World::new(OnFailure::Rollback);
    let first = world.decide(T0);
    // The VM was made, then the coordinator died before recording it.
    world.vms.insert(vm("server", 0), building());
    assert_eq!(world.decide(T0 + Duration::minutes(1)), first);
    world.step(T0 + Duration::minutes(1));
    assert_eq!(world.vms.len(), 1);
    assert_eq!(world.cluster.nodes().len(), 1);
}

#[test]
fn a_gate_on_all_nodes_passes_only_when_every_node_has_the_taskserv() {
    let mut world = workers_requested(OnFailure::Rollback);
    world.install(vm("worker", 0));
    assert_eq!(world.decide(T0 + Duration::minutes(1)), vec![]);
    world.install(vm("worker", 1));
    assert_eq!(
        world.decide(T0 + Duration::minutes(1)),
        vec![Action::PassGate {
            gate: gate("worker")
        }]
    );
}

#[test]
fn a_gate_on_n_nodes_passes_with_n_of_them() {
    let mut command = request(OnFailure::Rollback);
    if let ClusterCommand::Request { topology, .. } = &mut command {
        topology.gates[1].nodes = crate::cluster::GateNodes::Count(1);
    }
    let mut world = World::requested(command);
    world.step(T0);
    world.install(vm("server", 0));
    world.step(T0);
    world.step(T0);
    world.install(vm("worker", 1));
    assert_eq!(
        world.decide(T0),
        vec![Action::PassGate {
            gate: gate("worker")
        }]
    );
}

#[test]
fn the_next_stages_nodes_are_requested_only_after_its_gate_passed() {
    let mut world = World::new(OnFailure::Rollback);
    world.step(T0);
    world.install(vm("server", 0));
    assert_eq!(
        world.step(T0),
        vec![Action::PassGate {
            gate: gate("server")
        }]
    );
    assert_eq!(
        world.step(T0),
        vec![request_node("worker", 0), request_node("worker", 1)]
    );
}

#[test]
fn the_last_gate_passing_makes_the_cluster_ready() {
    let mut world = workers_requested(OnFailure::Rollback);
    world.install(vm("worker", 0));
    world.install(vm("worker", 1));
    world.step(T0);
    assert_eq!(world.step(T0), vec![Action::MarkReady]);
    assert_eq!(world.cluster.status(), ClusterStatus::Ready);
    assert_eq!(world.decide(T0), vec![]);
}

#[test]
fn a_gate_that_times_out_rolls_back_every_made_node_then_fails_with_the_reason() {
    let mut world = workers_requested(OnFailure::Rollback);
    world.install(vm("worker", 0));
    let before = T0 + Duration::seconds(599);
    assert_eq!(world.decide(before), vec![]);
    let late = T0 + Duration::seconds(600);
    let why = "k3s was installed on 1 of the 2 nodes of role worker within 600 s; 2 must have it";
    assert_eq!(
        world.step(late),
        vec![Action::FailGate {
            gate: gate("worker"),
            why: why.into()
        }]
    );
    assert_eq!(
        world.step(late),
        vec![Action::StartRollback { why: why.into() }]
    );
    assert_eq!(
        world.step(late),
        vec![
            destroy("server", 0),
            destroy("worker", 0),
            destroy("worker", 1)
        ]
    );
    assert_eq!(world.step(late), vec![], "waits for the destroys to end");
    world.destroys_end();
    assert_eq!(world.step(late), vec![Action::Fail { why: why.into() }]);
    assert_eq!(world.cluster.status(), ClusterStatus::Failed);
    assert_eq!(world.cluster.failure(), Some(why));
    assert_eq!(world.decide(late), vec![]);
}

#[test]
fn a_gate_fails_at_once_when_too_many_of_its_nodes_failed() {
    let mut world = workers_requested(OnFailure::Rollback);
    world.fail_install(vm("worker", 1));
    assert_eq!(
        world.decide(T0),
        vec![Action::FailGate {
            gate: gate("worker"),
            why: "k3s failed on 1 of the 2 nodes of role worker; 2 must have it".into()
        }]
    );
}

#[test]
fn with_keep_a_failed_gate_fails_the_cluster_and_keeps_its_nodes() {
    let mut world = workers_requested(OnFailure::Keep);
    let late = T0 + Duration::hours(1);
    world.step(late);
    let actions = world.step(late);
    assert!(matches!(actions.as_slice(), [Action::Fail { .. }]));
    assert_eq!(world.cluster.status(), ClusterStatus::Failed);
    assert_eq!(world.cluster.nodes().len(), 3);
    assert!(world.vms.values().all(|v| !v.is_going()));
    assert_eq!(world.decide(late), vec![]);
}

#[test]
fn a_rollback_destroys_a_vm_made_but_not_recorded_before_a_restart() {
    let mut world = World::new(OnFailure::Rollback);
    world.step(T0);
    world.install(vm("server", 0));
    world.step(T0);
    // The first worker's VM was made; the coordinator died before recording it.
    world.vms.insert(vm("worker", 0), building());
    world.command(ClusterCommand::StartRollback {
        why: "stopped".into(),
    });
    assert_eq!(
        world.step(T0),
        vec![destroy("server", 0), destroy("worker", 0)]
    );
}

#[test]
fn a_destroyed_cluster_destroys_every_node_then_ends_destroyed() {
    let mut world = workers_requested(OnFailure::Rollback);
    world.command(ClusterCommand::RequestDestroy);
    assert_eq!(
        world.step(T0),
        vec![
            destroy("server", 0),
            destroy("worker", 0),
            destroy("worker", 1)
        ]
    );
    assert_eq!(world.step(T0), vec![]);
    world.destroys_end();
    assert_eq!(world.step(T0), vec![Action::MarkDestroyed]);
    assert_eq!(world.cluster.status(), ClusterStatus::Destroyed);
    assert_eq!(world.decide(T0), vec![]);
}

fn ready_world() -> World {
    let mut world = workers_requested(OnFailure::Rollback);
    world.install(vm("worker", 0));
    world.install(vm("worker", 1));
    world.step(T0);
    world.step(T0);
    assert_eq!(world.cluster.status(), ClusterStatus::Ready);
    world
}

#[test]
fn scaling_up_requests_the_new_nodes() {
    let mut world = ready_world();
    world.command(ClusterCommand::Scale {
        role: role("worker"),
        count: 3,
    });
    assert_eq!(world.step(T0), vec![request_node("worker", 2)]);
    assert_eq!(world.decide(T0), vec![]);
}

#[test]
fn scaling_down_destroys_the_last_nodes_then_removes_them() {
    let mut world = ready_world();
    world.command(ClusterCommand::Scale {
        role: role("worker"),
        count: 1,
    });
    assert_eq!(world.step(T0), vec![destroy("worker", 1)]);
    assert_eq!(world.step(T0), vec![]);
    world.destroys_end();
    assert_eq!(
        world.step(T0),
        vec![Action::RemoveNode {
            vm: vm("worker", 1)
        }]
    );
    assert!(world.cluster.retired().is_empty());
    // Back up again: the place gets a VM of the next generation, not the destroyed one.
    world.command(ClusterCommand::Scale {
        role: role("worker"),
        count: 2,
    });
    assert_eq!(
        world.decide(T0),
        vec![Action::RequestNode {
            role: role("worker"),
            index: 1,
            vm: id().node_vm(&role("worker"), 1, 1)
        }]
    );
}

#[test]
fn a_replaced_node_gets_a_new_vm_and_the_old_is_destroyed() {
    let mut world = ready_world();
    world.command(ClusterCommand::ReplaceNode {
        role: role("worker"),
        index: 0,
    });
    let new_vm = id().node_vm(&role("worker"), 0, 1);
    assert_eq!(
        world.step(T0),
        vec![
            Action::RequestNode {
                role: role("worker"),
                index: 0,
                vm: new_vm
            },
            destroy("worker", 0)
        ]
    );
    world.destroys_end();
    assert_eq!(
        world.step(T0),
        vec![Action::RemoveNode {
            vm: vm("worker", 0)
        }]
    );
    assert_eq!(world.cluster.node(&role("worker"), 0).unwrap().vm, new_vm);
}
