//! Carrying out the coordinator's decisions for one cluster, as its owner: a node is made
//! through the VM request use case (validation, policies and limits apply), a node's VM is
//! destroyed through the VM destroy use case, and the rest are the cluster's commands.

use std::collections::BTreeMap;

use domain::cluster::coordinator::Action;
use domain::cluster::{Cluster, ClusterCommand, ClusterId, ClusterMember, OnFailure, RoleName};
use domain::provisioning::{Provisioning, ValueError, VmId, VmName, VmStatus};
use domain::taskservs::TaskservState;
use time::OffsetDateTime;

use super::render::{render, Outputs};
use crate::vms::{SshKeyChoice, VmRequest};
use crate::{App, Caller, Error};

/// The name of node `index` of `role`: `<cluster>-<role>-<index>`.
pub(super) fn node_name(
    cluster: &VmName,
    role: &RoleName,
    index: u32,
) -> Result<VmName, ValueError> {
    VmName::parse(&format!("{}-{role}-{index}", cluster.as_str()))
}

/// Why an action was not carried out.
#[derive(Debug)]
pub(super) enum Stop {
    /// The platform refused the node (validation, a policy, a limit, an output missing):
    /// asking again changes nothing, so the cluster fails with this reason.
    Refused(String),
    /// Nothing was changed for now (a database error, a read model behind): try again.
    Later(Error),
}

impl From<Error> for Stop {
    fn from(e: Error) -> Self {
        Stop::Later(e)
    }
}

impl From<store::StoreError> for Stop {
    fn from(e: store::StoreError) -> Self {
        Stop::Later(e.into())
    }
}

/// A cluster and the VMs the coordinator watches, as loaded for one decision.
pub(super) struct Loaded<'a> {
    pub id: ClusterId,
    pub cluster: &'a Cluster,
    pub vms: &'a BTreeMap<VmId, Provisioning>,
}

impl App {
    /// Carries out `action`; the cluster's command it implies is sent after it.
    pub(super) async fn carry_out(
        &self,
        caller: &Caller,
        loaded: &Loaded<'_>,
        action: &Action,
        now: OffsetDateTime,
    ) -> Result<(), Stop> {
        match action {
            Action::RequestNode { role, index, vm } => {
                let exists = loaded
                    .vms
                    .get(vm)
                    .is_some_and(|v| v.lifecycle().status != VmStatus::Unknown);
                // Made before a restart and not recorded yet: only record it (asking again
                // would count it against the owner's limits a second time).
                if !exists {
                    self.request_node(caller, loaded, role, *index, *vm).await?;
                }
            }
            Action::DestroyNode { vm } => {
                match self.destroy_vm(caller, *vm, None).await {
                    Ok(_) | Err(Error::Conflict(_)) => {}
                    Err(e) => return Err(Stop::Later(e)),
                }
                return Ok(());
            }
            _ => {}
        }
        let Some(command) = action.command(now) else {
            return Ok(());
        };
        self.command_cluster(caller, loaded.id, command).await
    }

    async fn request_node(
        &self,
        caller: &Caller,
        loaded: &Loaded<'_>,
        role: &RoleName,
        index: u32,
        vm: VmId,
    ) -> Result<(), Stop> {
        let refused = |why: String| Stop::Refused(format!("node {role}[{index}]: {why}"));
        let Some(asked) = loaded.cluster.requested() else {
            return Err(refused("the cluster is not requested".into()));
        };
        let spec = asked
            .topology
            .role(role)
            .ok_or_else(|| refused("the role is not in the cluster".into()))?;
        let taskservs = render(&spec.taskservs, &outputs(loaded)).map_err(refused)?;
        let nodes = &asked.nodes;
        let name = node_name(&nodes.name, role, index).map_err(|e| refused(e.to_string()))?;
        let input = VmRequest {
            id: Some(vm),
            name,
            provider: asked.provider.clone(),
            template: spec.template.clone(),
            ssh_key: SshKeyChoice::Key(nodes.ssh_public_key.clone()),
            allow_ssh_from: nodes.allow_ssh_from.iter().map(|c| c.to_string()).collect(),
            duration: nodes.duration_hours,
            taskservs,
            cluster: Some(Box::new(ClusterMember {
                id: loaded.id,
                role: role.clone(),
                index,
            })),
        };
        match self.request_vm(caller, input, None).await {
            Ok(_) => Ok(()),
            Err(
                e @ (Error::Invalid { .. }
                | Error::Forbidden { .. }
                | Error::Conflict(_)
                | Error::TooLarge(_)),
            ) => Err(refused(e.to_string())),
            Err(e) => Err(Stop::Later(e)),
        }
    }

    /// A refusal ends the cluster: rolled back or kept as its template says while it is
    /// being made; a scale the platform refuses is undone.
    pub(super) async fn refused(
        &self,
        caller: &Caller,
        loaded: &Loaded<'_>,
        why: String,
    ) -> Result<(), Stop> {
        use domain::cluster::ClusterStatus as S;
        let Some(asked) = loaded.cluster.requested() else {
            return Ok(());
        };
        tracing::warn!(cluster = %loaded.id, %why, "the platform refused a node of the cluster");
        let command = match loaded.cluster.status() {
            S::Requested | S::Creating => match asked.topology.on_failure {
                OnFailure::Rollback => ClusterCommand::StartRollback { why },
                OnFailure::Keep => ClusterCommand::Fail { why },
            },
            S::Ready => {
                // Back to the nodes it has, role by role.
                for role in &asked.topology.roles {
                    let has = loaded
                        .cluster
                        .nodes()
                        .iter()
                        .filter(|n| n.role == role.name)
                        .count();
                    let has = u32::try_from(has).unwrap_or(u32::MAX);
                    if has < role.count {
                        let undo = ClusterCommand::Scale {
                            role: role.name.clone(),
                            count: has.max(role.min),
                        };
                        self.command_cluster(caller, loaded.id, undo).await?;
                    }
                }
                return Ok(());
            }
            _ => return Ok(()),
        };
        self.command_cluster(caller, loaded.id, command).await
    }

    pub(super) async fn command_cluster(
        &self,
        caller: &Caller,
        id: ClusterId,
        command: ClusterCommand,
    ) -> Result<(), Stop> {
        store::execute::<Cluster>(&self.pool, id, command, &caller.metadata())
            .await
            .map(|_| ())
            .map_err(|e| Stop::Later(crate::command_not_stored(e)))
    }
}

/// What each node in use reported, by role and index (a later install overrides).
fn outputs(loaded: &Loaded<'_>) -> Outputs {
    let mut found = Outputs::new();
    for node in loaded.cluster.nodes() {
        let Some(vm) = loaded.vms.get(&node.vm) else {
            continue;
        };
        let entry = found
            .entry((node.role.as_str().to_owned(), node.index))
            .or_default();
        for step in &vm.lifecycle().taskservs {
            if let TaskservState::Installed { outputs } = &step.state {
                entry.extend(outputs.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
        }
    }
    found
}
