//! Clusters: several VMs made as one from a template (`hcl/clusters`). A user asks for one
//! here ([`App::request_cluster`]); the [`coordinator`] then makes its nodes, stage by
//! stage, through the same VM use cases a user calls, so validation, policies and limits
//! apply to each node. Reading a cluster joins its aggregate with its nodes' VMs.

mod control;
pub mod coordinator;
mod nodes;
mod render;
mod request;

pub use request::{ClusterRequest, RoleChoice};

use std::collections::BTreeMap;

use domain::cluster::{Cluster, ClusterId, ClusterView, Requested, RoleName};
use domain::provisioning::{Provisioning, VmId, VmStatus};
use domain::taskservs::TaskservState;

use crate::{App, Caller, Error};

/// A cluster as its owner sees it: what it recorded, and where each node's VM is.
#[derive(Debug, Clone)]
pub struct ClusterRead {
    pub id: ClusterId,
    pub requested: Requested,
    pub view: ClusterView,
    pub nodes: Vec<NodeRead>,
    /// The outputs the nodes' taskservs reported (a server's URL), never a secret: the
    /// taskservs report where secrets are kept, not their values.
    pub outputs: BTreeMap<String, String>,
}

/// A node and its VM.
#[derive(Debug, Clone)]
pub struct NodeRead {
    pub role: RoleName,
    pub index: u32,
    pub vm: VmId,
    pub name: String,
    pub status: VmStatus,
    pub address: Option<String>,
}

impl App {
    /// The clusters the caller may see: their own, or every one for an admin with `all`.
    #[tracing::instrument(skip_all, err)]
    pub async fn clusters(&self, caller: &Caller, all: bool) -> Result<Vec<ClusterRead>, Error> {
        let owner = match all && caller.principal.is_admin() {
            true => None,
            false => Some(caller.principal.user),
        };
        let mut found = vec![];
        for id in store::clusters::ids(&self.pool, owner).await? {
            if let Some(read) = self.read_cluster(id).await? {
                found.push(read);
            }
        }
        Ok(found)
    }

    /// One cluster; not found when it does not exist or the caller may not see it.
    #[tracing::instrument(skip_all, fields(cluster = %id), err)]
    pub async fn cluster(&self, caller: &Caller, id: ClusterId) -> Result<ClusterRead, Error> {
        match self.read_cluster(id).await? {
            Some(read) if caller.principal.may_see(&read.requested.owner) => Ok(read),
            _ => Err(not_found(id)),
        }
    }

    /// The cluster's events after the sequence `after`, in order, at most `limit`; not
    /// found as [`App::cluster`].
    #[tracing::instrument(skip_all, fields(cluster = %id), err)]
    pub async fn cluster_events(
        &self,
        caller: &Caller,
        id: ClusterId,
        after: u64,
        limit: i64,
    ) -> Result<Vec<store::AuditEvent>, Error> {
        let (cluster, _) = store::load::<Cluster>(&self.pool, &id.to_string()).await?;
        match cluster.requested() {
            Some(requested) if caller.principal.may_see(&requested.owner) => {}
            _ => return Err(not_found(id)),
        }
        let kind = domain::AggregateKind::Cluster.type_name();
        let events = store::audit_events(&self.pool, kind, &id.to_string(), after, limit).await?;
        Ok(events)
    }

    async fn read_cluster(&self, id: ClusterId) -> Result<Option<ClusterRead>, Error> {
        let (cluster, _) = store::load::<Cluster>(&self.pool, &id.to_string()).await?;
        let Some(requested) = cluster.requested().cloned() else {
            return Ok(None);
        };
        let view = cluster.view();
        let mut nodes = vec![];
        let mut outputs = BTreeMap::new();
        for node in cluster.nodes() {
            let (vm, _) = store::load::<Provisioning>(&self.pool, &node.vm.to_string()).await?;
            let life = vm.lifecycle();
            for entry in &life.taskservs {
                if let TaskservState::Installed { outputs: reported } = &entry.state {
                    for (key, value) in reported {
                        let key = format!("{}[{}].{key}", node.role, node.index);
                        outputs.insert(key, value.clone());
                    }
                }
            }
            nodes.push(NodeRead {
                role: node.role.clone(),
                index: node.index,
                vm: node.vm,
                name: vm
                    .spec()
                    .map(|s| s.name.as_str().to_owned())
                    .unwrap_or_default(),
                status: life.status,
                address: life.ip.clone(),
            });
        }
        Ok(Some(ClusterRead {
            id,
            requested,
            view,
            nodes,
            outputs,
        }))
    }
}

fn not_found(id: ClusterId) -> Error {
    Error::NotFound(format!("no cluster {id}"))
}
