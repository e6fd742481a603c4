//! The cluster's transitions, as given / when / then.

use cqrs_es::test::TestFramework;
use time::Duration;

use crate::cluster::fixtures::*;
use crate::cluster::*;

type Given = TestFramework<Cluster>;

fn given() -> Given {
    Given::with(())
}

fn server_made() -> Vec<ClusterEvent> {
    vec![
        requested(OnFailure::Rollback),
        node_requested("server", 0, T0),
    ]
}

#[test]
fn a_request_records_the_resolved_topology() {
    given()
        .given_no_previous_events()
        .when(request(OnFailure::Rollback))
        .then_expect_events(vec![requested(OnFailure::Rollback)]);
}

#[test]
fn a_topology_with_a_role_in_no_stage_is_refused() {
    let mut command = request(OnFailure::Rollback);
    if let ClusterCommand::Request { topology, .. } = &mut command {
        topology.stages.pop();
    }
    given()
        .given_no_previous_events()
        .when(command)
        .then_expect_error(ClusterError::InvalidTopology(
            "role worker must be in exactly one stage".into(),
        ));
}

#[test]
fn a_node_of_the_first_stage_is_recorded_with_its_derived_vm() {
    given()
        .given(vec![requested(OnFailure::Rollback)])
        .when(record("server", 0, T0))
        .then_expect_events(vec![node_requested("server", 0, T0)]);
}

#[test]
fn the_same_node_recorded_again_records_nothing() {
    given()
        .given(server_made())
        .when(record("server", 0, T0 + Duration::minutes(5)))
        .then_expect_events(vec![]);
}

#[test]
fn a_node_with_another_vm_id_is_refused() {
    let other = crate::provisioning::VmId::new();
    given()
        .given(vec![requested(OnFailure::Rollback)])
        .when(ClusterCommand::RecordNode {
            role: role("server"),
            index: 0,
            vm: other,
            at: T0,
        })
        .then_expect_error(ClusterError::WrongVm {
            role: role("server"),
            index: 0,
            expected: vm("server", 0),
            got: other,
        });
}

#[test]
fn a_node_of_a_later_stage_is_refused_until_the_gates_before_it_pass() {
    given()
        .given(server_made())
        .when(record("worker", 0, T0))
        .then_expect_error(ClusterError::StageNotReached {
            role: role("worker"),
        });
}

#[test]
fn a_node_beyond_its_roles_count_is_refused() {
    given()
        .given(vec![requested(OnFailure::Rollback)])
        .when(record("server", 1, T0))
        .then_expect_error(ClusterError::UnknownNode {
            role: role("server"),
            index: 1,
        });
}

#[test]
fn a_gate_passes_once_and_a_second_pass_records_nothing() {
    let passed = ClusterEvent::GatePassed {
        stage: 0,
        gate: gate("server"),
    };
    given()
        .given(server_made())
        .when(ClusterCommand::PassGate {
            gate: gate("server"),
        })
        .then_expect_events(vec![passed.clone()]);
    given()
        .given([server_made(), vec![passed]].concat())
        .when(ClusterCommand::PassGate {
            gate: gate("server"),
        })
        .then_expect_events(vec![]);
}

#[test]
fn a_gate_is_not_decided_before_its_roles_nodes_are_requested() {
    given()
        .given(vec![requested(OnFailure::Rollback)])
        .when(ClusterCommand::FailGate {
            gate: gate("server"),
            why: "late".into(),
        })
        .then_expect_error(ClusterError::InvalidTransition {
            status: ClusterStatus::Requested,
            action: "decide a gate",
        });
}

#[test]
fn a_cluster_is_not_ready_before_every_gate_passed() {
    given()
        .given(server_made())
        .when(ClusterCommand::MarkReady)
        .then_expect_error(ClusterError::NotComplete);
}

#[test]
fn a_failed_gate_can_be_rolled_back_and_the_cluster_then_fails() {
    let failed = ClusterEvent::GateFailed {
        stage: 0,
        gate: gate("server"),
        why: "late".into(),
    };
    let rollback = ClusterEvent::RollbackStarted { why: "late".into() };
    given()
        .given([server_made(), vec![failed.clone()]].concat())
        .when(ClusterCommand::StartRollback { why: "late".into() })
        .then_expect_events(vec![rollback.clone()]);
    given()
        .given([server_made(), vec![failed, rollback]].concat())
        .when(ClusterCommand::Fail { why: "late".into() })
        .then_expect_events(vec![ClusterEvent::ClusterFailed { why: "late".into() }]);
}

#[test]
fn a_destroy_asked_twice_records_it_once_and_only_a_destroying_cluster_ends_destroyed() {
    given()
        .given(ready_events())
        .when(ClusterCommand::RequestDestroy)
        .then_expect_events(vec![ClusterEvent::ClusterDestroyRequested]);
    given()
        .given([ready_events(), vec![ClusterEvent::ClusterDestroyRequested]].concat())
        .when(ClusterCommand::RequestDestroy)
        .then_expect_events(vec![]);
    given()
        .given(ready_events())
        .when(ClusterCommand::MarkDestroyed)
        .then_expect_error(ClusterError::InvalidTransition {
            status: ClusterStatus::Ready,
            action: "be marked destroyed",
        });
}

#[test]
fn scaling_within_the_range_records_the_new_count() {
    given()
        .given(ready_events())
        .when(ClusterCommand::Scale {
            role: role("worker"),
            count: 3,
        })
        .then_expect_events(vec![ClusterEvent::ScaleRequested {
            role: role("worker"),
            count: 3,
        }]);
    given()
        .given(ready_events())
        .when(ClusterCommand::Scale {
            role: role("worker"),
            count: 2,
        })
        .then_expect_events(vec![]);
}

#[test]
fn scaling_out_of_the_range_is_refused_naming_the_role() {
    given()
        .given(ready_events())
        .when(ClusterCommand::Scale {
            role: role("worker"),
            count: 4,
        })
        .then_expect_error(ClusterError::OutOfRange {
            role: role("worker"),
            count: 4,
            min: 1,
            max: 3,
        });
    given()
        .given(ready_events())
        .when(ClusterCommand::Scale {
            role: role("server"),
            count: 2,
        })
        .then_expect_error(ClusterError::OutOfRange {
            role: role("server"),
            count: 2,
            min: 1,
            max: 1,
        });
    let refused = ClusterError::OutOfRange {
        role: role("worker"),
        count: 0,
        min: 1,
        max: 3,
    };
    assert_eq!(
        refused.to_string(),
        "role worker: 0 nodes is outside its range 1 to 3"
    );
}

#[test]
fn a_cluster_being_made_is_not_scaled() {
    given()
        .given(server_made())
        .when(ClusterCommand::Scale {
            role: role("worker"),
            count: 3,
        })
        .then_expect_error(ClusterError::InvalidTransition {
            status: ClusterStatus::Creating,
            action: "scale",
        });
}

#[test]
fn a_replaced_node_gets_the_next_generations_vm() {
    given()
        .given(ready_events())
        .when(ClusterCommand::ReplaceNode {
            role: role("worker"),
            index: 1,
        })
        .then_expect_events(vec![ClusterEvent::NodeReplaced {
            role: role("worker"),
            index: 1,
            old_vm: vm("worker", 1),
            new_vm: id().node_vm(&role("worker"), 1, 1),
        }]);
}

#[test]
fn a_node_scaled_away_is_removed_once_and_one_in_use_is_not() {
    let scaled = ClusterEvent::ScaleRequested {
        role: role("worker"),
        count: 1,
    };
    let removed = ClusterEvent::NodeRemoved {
        role: role("worker"),
        index: 1,
        vm: vm("worker", 1),
    };
    given()
        .given([ready_events(), vec![scaled.clone()]].concat())
        .when(ClusterCommand::RemoveNode {
            vm: vm("worker", 1),
        })
        .then_expect_events(vec![removed.clone()]);
    given()
        .given([ready_events(), vec![scaled, removed]].concat())
        .when(ClusterCommand::RemoveNode {
            vm: vm("worker", 1),
        })
        .then_expect_events(vec![]);
    given()
        .given(ready_events())
        .when(ClusterCommand::RemoveNode {
            vm: vm("worker", 0),
        })
        .then_expect_error(ClusterError::InUse(vm("worker", 0)));
}

fn scaled_to(count: u32) -> ClusterEvent {
    ClusterEvent::ScaleRequested {
        role: role("worker"),
        count,
    }
}

fn complete(count: u32) -> ClusterCommand {
    ClusterCommand::CompleteScale {
        role: role("worker"),
        count,
    }
}

#[test]
fn a_scale_completes_once_its_nodes_are_made_or_removed_and_only_once() {
    let grown = [
        ready_events(),
        vec![scaled_to(3), node_requested("worker", 2, T0)],
    ]
    .concat();
    let completed = ClusterEvent::ScaleCompleted {
        role: role("worker"),
        count: 3,
    };
    given()
        .given(grown.clone())
        .when(complete(3))
        .then_expect_events(vec![completed.clone()]);
    given()
        .given([grown, vec![completed]].concat())
        .when(complete(3))
        .then_expect_events(vec![]);
    given()
        .given([ready_events(), vec![scaled_to(3)]].concat())
        .when(complete(3))
        .then_expect_error(ClusterError::NotComplete);
    // Down: complete once the dropped node is removed.
    let removed = ClusterEvent::NodeRemoved {
        role: role("worker"),
        index: 1,
        vm: vm("worker", 1),
    };
    given()
        .given([ready_events(), vec![scaled_to(1)]].concat())
        .when(complete(1))
        .then_expect_error(ClusterError::NotComplete);
    given()
        .given([ready_events(), vec![scaled_to(1), removed]].concat())
        .when(complete(1))
        .then_expect_events(vec![ClusterEvent::ScaleCompleted {
            role: role("worker"),
            count: 1,
        }]);
}

#[test]
fn a_scale_replaced_by_a_later_one_of_its_role_never_completes() {
    given()
        .given([ready_events(), vec![scaled_to(3), scaled_to(1)]].concat())
        .when(complete(3))
        .then_expect_events(vec![]);
}

#[test]
fn a_ready_cluster_fails_only_while_it_scales() {
    let why = "scaling role worker to 3: k3s failed on node worker[2]".to_owned();
    given()
        .given([ready_events(), vec![scaled_to(3)]].concat())
        .when(ClusterCommand::Fail { why: why.clone() })
        .then_expect_events(vec![ClusterEvent::ClusterFailed { why: why.clone() }]);
    given()
        .given(ready_events())
        .when(ClusterCommand::Fail { why })
        .then_expect_error(ClusterError::InvalidTransition {
            status: ClusterStatus::Ready,
            action: "fail",
        });
}
