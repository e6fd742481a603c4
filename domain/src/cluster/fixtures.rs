//! A small cluster for the tests: one `server`, then one to three `worker`s (two by
//! default) once k3s is on the server; ready once k3s is on every worker.

use time::macros::datetime;
use time::OffsetDateTime;
use uuid::Uuid;

use super::*;
use crate::identity::UserId;
use crate::provisioning::{ProviderId, TemplateId, VmId};
use crate::taskservs::TaskservName;

pub const T0: OffsetDateTime = datetime!(2026-01-01 00:00 UTC);

pub fn id() -> ClusterId {
    ClusterId::from(Uuid::from_u128(0xc1))
}

pub fn role(name: &str) -> RoleName {
    RoleName::parse(name).unwrap()
}

pub fn k3s() -> TaskservName {
    TaskservName::parse("k3s").unwrap()
}

pub fn gate(on: &str) -> GateId {
    GateId {
        role: role(on),
        taskserv: k3s(),
    }
}

pub fn vm(on: &str, index: u32) -> VmId {
    id().node_vm(&role(on), index, 0)
}

pub fn topology(on_failure: OnFailure) -> Topology {
    let spec = |name: &str, count, min, max| RoleSpec {
        name: role(name),
        count,
        min,
        max,
        template: TemplateId::parse("medium").unwrap(),
        taskservs: vec![],
    };
    let gate = |on: &str, nodes, within_secs| GateSpec {
        role: role(on),
        taskserv: k3s(),
        nodes,
        within_secs,
    };
    Topology {
        roles: vec![spec("server", 1, 1, 1), spec("worker", 2, 1, 3)],
        stages: vec![vec![role("server")], vec![role("worker")]],
        gates: vec![
            gate("server", GateNodes::All, 900),
            gate("worker", GateNodes::All, 600),
        ],
        on_failure,
    }
}

pub fn nodes() -> NodeSettings {
    use crate::provisioning::{Cidr, DurationHours, SshPublicKey, VmName};
    NodeSettings {
        name: VmName::parse("pair").unwrap(),
        ssh_public_key: SshPublicKey::parse(
            "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEpXvA+cP8hcraKOw+cO1rzIpAv7ms7vMYjhAKF7Qed/ t@e",
        )
        .unwrap(),
        allow_ssh_from: vec![Cidr::parse("192.0.2.0/24").unwrap()],
        duration_hours: DurationHours::parse(8).unwrap(),
    }
}

pub fn request(on_failure: OnFailure) -> ClusterCommand {
    ClusterCommand::Request {
        id: id(),
        template: TemplateRef {
            name: "pair".into(),
            version: "sha256:0123".into(),
        },
        topology: topology(on_failure),
        nodes: Box::new(nodes()),
        provider: ProviderId::parse("local").unwrap(),
        owner: UserId::BUILTIN_ADMIN,
        at: T0,
    }
}

pub fn requested(on_failure: OnFailure) -> ClusterEvent {
    let ClusterCommand::Request {
        id,
        template,
        topology,
        nodes,
        provider,
        owner,
        at,
    } = request(on_failure)
    else {
        unreachable!()
    };
    ClusterEvent::ClusterRequested {
        id,
        template,
        topology,
        nodes,
        provider,
        owner,
        at,
    }
}

pub fn node_requested(on: &str, index: u32, at: OffsetDateTime) -> ClusterEvent {
    ClusterEvent::NodeRequested {
        role: role(on),
        index,
        generation: 0,
        vm: vm(on, index),
        at,
    }
}

pub fn record(on: &str, index: u32, at: OffsetDateTime) -> ClusterCommand {
    ClusterCommand::RecordNode {
        role: role(on),
        index,
        vm: vm(on, index),
        at,
    }
}

/// Requested, its server made and gated, both workers made and gated: ready.
pub fn ready_events() -> Vec<ClusterEvent> {
    vec![
        requested(OnFailure::Rollback),
        node_requested("server", 0, T0),
        ClusterEvent::GatePassed {
            stage: 0,
            gate: gate("server"),
        },
        node_requested("worker", 0, T0),
        node_requested("worker", 1, T0),
        ClusterEvent::GatePassed {
            stage: 1,
            gate: gate("worker"),
        },
        ClusterEvent::ClusterReady,
    ]
}
