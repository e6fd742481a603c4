//! Properties of the coordinator over random runs: random VM outcomes, times, destroys
//! and scaling between decisions.

use std::collections::BTreeSet;

use proptest::prelude::*;
use time::Duration;

use super::*;

/// What happens between two decisions.
#[derive(Debug, Clone)]
enum Happening {
    /// The VM at this position of the world's VMs gets k3s, fails it, fails, or is gone.
    Vm(usize, u8),
    /// Time passes.
    Later(u16),
    Destroy,
    Scale(u32),
}

fn happening() -> impl Strategy<Value = Happening> {
    prop_oneof![
        6 => (0..8usize, 0..4u8).prop_map(|(i, k)| Happening::Vm(i, k)),
        3 => (0..900u16).prop_map(Happening::Later),
        1 => Just(Happening::Destroy),
        1 => (0..5u32).prop_map(Happening::Scale),
    ]
}

fn happen(world: &mut World, now: &mut OffsetDateTime, happening: &Happening) {
    match *happening {
        Happening::Vm(i, kind) => {
            let Some(vm) = world.vms.keys().nth(i).copied() else {
                return;
            };
            let v = world.vms.get_mut(&vm).unwrap();
            if v.is_going() {
                return;
            }
            match kind {
                0 | 1 => {
                    v.state = VmState::Running;
                    v.installed.insert(k3s());
                }
                2 => {
                    v.failed.insert(k3s());
                }
                _ => v.state = VmState::Failed,
            }
        }
        Happening::Later(secs) => *now += Duration::seconds(i64::from(secs)),
        Happening::Destroy => {
            if let Ok(events) = world.cluster.decide(ClusterCommand::RequestDestroy, &()) {
                for e in events {
                    world.cluster.apply(e);
                }
            }
        }
        Happening::Scale(count) => {
            let scale = ClusterCommand::Scale {
                role: role("worker"),
                count,
            };
            if let Ok(events) = world.cluster.decide(scale, &()) {
                for e in events {
                    world.cluster.apply(e);
                }
            }
        }
    }
}

proptest! {
    #[test]
    fn deciding_twice_gives_the_same_actions_and_none_is_repeated_once_carried_out(
        keep in any::<bool>(),
        happenings in prop::collection::vec(happening(), 0..40),
    ) {
        let on_failure = if keep { OnFailure::Keep } else { OnFailure::Rollback };
        let mut world = World::new(on_failure);
        let mut now = T0;
        let mut requested = BTreeSet::new();
        for h in &happenings {
            happen(&mut world, &mut now, h);
            let actions = world.decide(now);
            prop_assert_eq!(&actions, &world.decide(now));
            world.carry_out(&actions, now);
            let again = world.decide(now);
            for action in &actions {
                prop_assert!(!again.contains(action), "{:?} decided again", action);
                if let Action::RequestNode { vm, .. } = action {
                    prop_assert!(requested.insert(*vm), "VM {} requested twice", vm);
                }
            }
            world.destroys_end();
        }
    }
}
