//! Whether a gate passes or fails, from its role's nodes' VMs and the time. (A part of the
//! coordinator, apart for size.)

use std::collections::BTreeMap;

use time::OffsetDateTime;

use super::{deadline, Action, NodeVm, VmState};
use crate::cluster::aggregate::Cluster;
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
