//! A ready cluster's scales, as given / when / then: completed once their nodes are
//! through, or failing the cluster when an added node fails.

use time::Duration;

use super::*;

/// A ready cluster whose workers are to be `count`.
fn scaled_to(count: u32) -> World {
    let mut world = ready_world();
    world.command(ClusterCommand::Scale {
        role: role("worker"),
        count,
    });
    world
}

#[test]
fn a_scale_up_completes_once_its_new_node_passed_the_roles_gate() {
    let mut world = scaled_to(3);
    world.step(T0);
    assert_eq!(world.step(T0), vec![], "the new node has no k3s yet");
    world.install(vm("worker", 2));
    let done = Action::CompleteScale {
        role: role("worker"),
        count: 3,
    };
    assert_eq!(world.step(T0), vec![done]);
    assert!(world.cluster.scaling().is_empty());
    assert_eq!(world.decide(T0), vec![]);
}

#[test]
fn a_scale_down_completes_once_its_dropped_node_is_removed() {
    let mut world = scaled_to(1);
    world.step(T0);
    world.destroys_end();
    world.step(T0);
    assert_eq!(
        world.step(T0),
        vec![Action::CompleteScale {
            role: role("worker"),
            count: 1,
        }]
    );
}

#[test]
fn a_scaled_node_that_fails_or_times_out_fails_the_cluster_and_keeps_its_nodes() {
    let mut world = scaled_to(3);
    world.step(T0);
    world.fail_install(vm("worker", 2));
    let why = "scaling role worker to 3: k3s failed on node worker[2]".to_owned();
    assert_eq!(world.step(T0), vec![Action::Fail { why }]);
    assert_eq!(world.cluster.status(), ClusterStatus::Failed);
    assert_eq!(world.decide(T0), vec![], "nothing is destroyed");

    let mut world = scaled_to(3);
    world.step(T0);
    assert_eq!(world.step(T0 + Duration::seconds(599)), vec![]);
    let why = "scaling role worker to 3: k3s was not installed on node worker[2] within 600 s";
    assert_eq!(
        world.step(T0 + Duration::seconds(600)),
        vec![Action::Fail { why: why.into() }]
    );
}
