//! The cluster API's wire types: requests and answers, apart from the domain's types.

use std::collections::BTreeMap;

use app::clusters::ClusterRead;
use domain::cluster::GateState;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use utoipa::ToSchema;
use uuid::Uuid;

/// A request for a cluster of a template of `GET /api/v1/extensions/clusters`.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({
    "name": "lab",
    "template": "k3s-ha",
    "provider": "local",
    "roles": {"agent": {"count": 2}},
    "ssh_key_id": "0b6f1c7e-3a51-4f0e-9a43-4b1f2a8e5c11",
    "allow_ssh_from": ["192.0.2.0/24"],
    "duration_hours": 8
}))]
pub struct CreateClusterIn {
    /// Optional client-chosen id (UUID): the same request again answers with the same
    /// cluster.
    pub id: Option<Uuid>,
    /// The cluster's name; node `i` of role `r` is the VM `<name>-<r>-<i>` (each at most 63
    /// characters of `[A-Za-z0-9._-]`).
    #[schema(min_length = 1, max_length = 40, pattern = r"^[A-Za-z0-9._-]+$")]
    pub name: String,
    /// A cluster template's name, e.g. `k3s-ha`.
    #[schema(min_length = 1, max_length = 63, pattern = r"^[a-z][a-z0-9-]*$")]
    pub template: String,
    /// The provider every node is made on.
    #[schema(min_length = 1, max_length = 64, pattern = r"^[a-z0-9._-]+$")]
    pub provider: String,
    /// Per role: a count within the role's range, and which of its provider templates to
    /// use (its first enabled one when left out).
    #[serde(default)]
    pub roles: BTreeMap<String, RoleIn>,
    /// An OpenSSH public key for every node; or `ssh_key_id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssh_public_key: Option<String>,
    /// The id of a key registered at `/api/v1/ssh-keys`, instead of `ssh_public_key`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssh_key_id: Option<String>,
    /// IPv4 networks allowed to reach the nodes over SSH, as for a VM (`me` for the
    /// caller's address).
    #[schema(min_items = 1, max_items = 32)]
    pub allow_ssh_from: Vec<String>,
    /// How long the nodes may live: 1 to 168 hours.
    #[schema(minimum = 1, maximum = 168)]
    pub duration_hours: i64,
}

/// What a request chooses for a role.
#[derive(Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RoleIn {
    /// Nodes of the role, within its range (a fixed count may only be repeated).
    #[schema(minimum = 0, maximum = 1000)]
    pub count: Option<u32>,
    /// One of the role's provider templates.
    #[schema(min_length = 1, max_length = 64, pattern = r"^[a-z0-9._-]+$")]
    pub template: Option<String>,
}

/// A role's new node count.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ScaleIn {
    #[schema(min_length = 1, max_length = 63, pattern = r"^[a-z][a-z0-9-]*$")]
    pub role: String,
    #[schema(minimum = 0, maximum = 1000)]
    pub count: u32,
}

/// A cluster: its template, roles, nodes (each a VM of `GET /api/v1/vms`), gates and the
/// outputs its nodes reported.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ClusterOut {
    pub id: Uuid,
    pub name: String,
    pub template: String,
    /// The template's content hash when the cluster was requested.
    pub template_version: String,
    pub provider: String,
    pub owner: Uuid,
    /// `requested`, `creating`, `ready`, `rolling_back`, `failed`, `destroying` or
    /// `destroyed`.
    pub status: String,
    /// Why it failed (a gate's time ran out, a node was refused).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
    pub roles: Vec<RoleOut>,
    pub nodes: Vec<NodeOut>,
    pub gates: Vec<GateOut>,
    /// What the nodes' taskservs reported, as `<role>[<index>].<key>`, e.g.
    /// `seed[0].server_url`. Never a secret: taskservs report where secrets are kept.
    pub outputs: BTreeMap<String, String>,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub requested_at: OffsetDateTime,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct RoleOut {
    pub name: String,
    pub count: u32,
    pub min: u32,
    pub max: u32,
    /// The provider template its nodes use.
    pub template: String,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct NodeOut {
    pub role: String,
    pub index: u32,
    pub vm_id: Uuid,
    pub name: String,
    /// The VM's status, as `GET /api/v1/vms/{id}` shows it.
    pub status: String,
    pub address: Option<String>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct GateOut {
    pub role: String,
    pub taskserv: String,
    /// The stage whose roles it holds back (0 first).
    pub stage: u32,
    /// `pending`, `passed` or `failed`.
    pub state: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

impl From<ClusterRead> for ClusterOut {
    fn from(read: ClusterRead) -> Self {
        let asked = read.requested;
        ClusterOut {
            id: read.id.as_uuid(),
            name: asked.nodes.name.as_str().to_owned(),
            template: asked.template.name,
            template_version: asked.template.version,
            provider: asked.provider.as_str().to_owned(),
            owner: asked.owner.as_uuid(),
            status: read.view.status.as_str().to_owned(),
            failure: read.view.failure,
            roles: asked
                .topology
                .roles
                .iter()
                .map(|r| RoleOut {
                    name: r.name.to_string(),
                    count: r.count,
                    min: r.min,
                    max: r.max,
                    template: r.template.as_str().to_owned(),
                })
                .collect(),
            nodes: read
                .nodes
                .into_iter()
                .map(|n| NodeOut {
                    role: n.role.to_string(),
                    index: n.index,
                    vm_id: n.vm.as_uuid(),
                    name: n.name,
                    status: n.status.as_str().to_owned(),
                    address: n.address,
                })
                .collect(),
            gates: read
                .view
                .gates
                .into_iter()
                .map(|g| {
                    let (state, why) = match g.state {
                        GateState::Pending => ("pending", None),
                        GateState::Passed => ("passed", None),
                        GateState::Failed { why } => ("failed", Some(why)),
                    };
                    GateOut {
                        role: g.gate.role.to_string(),
                        taskserv: g.gate.taskserv.to_string(),
                        stage: g.stage,
                        state: state.to_owned(),
                        why,
                    }
                })
                .collect(),
            outputs: read.outputs,
            requested_at: asked.at,
        }
    }
}
