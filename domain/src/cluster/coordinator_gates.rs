//! Whether a gate passes or fails, and whether a scale is through, from the role's nodes'
//! VMs and the time. (A part of the coordinator, apart for size.)

use std::collections::BTreeMap;

use time::OffsetDateTime;

use super::{deadline, Action, NodeVm, VmState};
use crate::cluster::aggregate::{Cluster, Scaling};
use crate::cluster::topology::GateSpec;
use crate::provisioning::VmId;

/// `PassGate` when the taskserv is installed on enough of the role's nodes; `FailGate`
/// when too many failed for that to happen, or when the time ran out; `None` to wait (also
/// while some of the role's nodes are not requested yet: the time counts from the last).
pub(super) fn judge(
    cluster: &Cluster,
    gate: &GateSpec,
    vms: &BTreeMap<VmId, NodeVm>,
    now: OffsetDateTime,
) -> Option<Action> {
    let count = cluster.topology()?.role(&gate.role)?.count;
    let nodes: Vec<_> = (0..count)
        .map(|i| cluster.node(&gate.role, i))
        .collect::<Option<_>>()?;
    let needed = gate.nodes.needed(count);
    let mut installed = 0;
    let mut lost = 0;
    for node in &nodes {
        let Some(vm) = vms.get(&node.vm) else {
            continue;
        };
        if vm.installed.contains(&gate.taskserv) && !vm.is_going() {
            installed += 1;
        } else if vm.is_going() || vm.state == VmState::Failed || vm.failed.contains(&gate.taskserv)
        {
            lost += 1;
        }
    }
    let (role, taskserv) = (&gate.role, &gate.taskserv);
    let why = if installed >= needed {
        return Some(Action::PassGate { gate: gate.id() });
    } else if count - lost < needed {
        format!("{taskserv} failed on {lost} of the {count} nodes of role {role}; {needed} must have it")
    } else {
        let last = nodes.iter().map(|n| n.at).max()?;
        if now < deadline(last, gate.within_secs) {
            return None;
        }
        format!(
            "{taskserv} was installed on {installed} of the {count} nodes of role {role} \
             within {} s; {needed} must have it",
            gate.within_secs
        )
    };
    Some(Action::FailGate {
        gate: gate.id(),
        why,
    })
}

/// `CompleteScale` once every node a scale adds has passed each gate of its role (is
/// running, for a role without one), or every node it drops is destroyed and removed;
/// `Fail` when an added node failed, or a gate's taskserv was not installed on it within
/// the gate's time (counted from when the node was requested); `None` to wait.
pub(super) fn judge_scale(
    cluster: &Cluster,
    scale: &Scaling,
    vms: &BTreeMap<VmId, NodeVm>,
    now: OffsetDateTime,
) -> Option<Action> {
    let (role, count) = (&scale.role, scale.to);
    let complete = Action::CompleteScale {
        role: role.clone(),
        count,
    };
    if scale.to <= scale.from {
        let left = cluster
            .retired()
            .iter()
            .any(|n| n.role == *role && n.index >= count);
        return (!left).then_some(complete);
    }
    let gates: Vec<&GateSpec> = cluster
        .topology()?
        .gates
        .iter()
        .filter(|g| g.role == *role)
        .collect();
    let fail = |what: String| {
        Some(Action::Fail {
            why: format!("scaling role {role} to {count}: {what}"),
        })
    };
    let mut through = true;
    for index in scale.from..scale.to {
        let Some((node, vm)) = cluster
            .node(role, index)
            .and_then(|n| Some((n, vms.get(&n.vm)?)))
        else {
            through = false;
            continue;
        };
        if vm.is_going() || vm.state == VmState::Failed {
            return fail(format!("the VM of node {role}[{index}] failed or is gone"));
        }
        for gate in &gates {
            let taskserv = &gate.taskserv;
            if vm.failed.contains(taskserv) {
                return fail(format!("{taskserv} failed on node {role}[{index}]"));
            }
            if !vm.installed.contains(taskserv) {
                through = false;
                if now >= deadline(node.at, gate.within_secs) {
                    return fail(format!(
                        "{taskserv} was not installed on node {role}[{index}] within {} s",
                        gate.within_secs
                    ));
                }
            }
        }
        if gates.is_empty() && vm.state != VmState::Running {
            through = false;
        }
    }
    through.then_some(complete)
}
