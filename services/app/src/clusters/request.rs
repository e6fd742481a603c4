//! Requesting a cluster: the template resolved (counts, each role's provider template), the
//! SSH key and networks checked as for a VM, then the policies on every node's template
//! and the caller's limits against every node together: a cluster that cannot fit is
//! refused whole, before any node exists. Recorded once; the coordinator makes the nodes.

use std::collections::BTreeMap;

use ::clusters::{ClusterTemplate, Count};
use domain::cluster::{
    Cluster, ClusterCommand, ClusterError, ClusterId, GateNodes, GateSpec, NodeSettings, OnFailure,
    RoleName, RoleSpec, TemplateRef, Topology,
};
use domain::provisioning::{DurationHours, ProviderId, TemplateId, VmName};
use domain::taskservs::TaskservRequest;
use sha2::{Digest, Sha256};
use store::catalog::TemplateRow;
use store::CommandError;
use time::OffsetDateTime;

use super::ClusterRead;
use crate::vms::SshKeyChoice;
use crate::{App, Caller, Error};

/// A request for a cluster, its values parsed.
#[derive(Debug, Clone)]
pub struct ClusterRequest {
    /// The id the client chose, if it did: the same request again is answered as the first.
    pub id: Option<ClusterId>,
    /// The cluster's name; its nodes are named `<name>-<role>-<index>`.
    pub name: VmName,
    /// The cluster template's name (`GET /api/v1/extensions/clusters`).
    pub template: String,
    pub provider: ProviderId,
    /// Per role: a count within its range, and which of its provider templates to use.
    pub roles: BTreeMap<String, RoleChoice>,
    pub ssh_key: SshKeyChoice,
    pub allow_ssh_from: Vec<String>,
    pub duration: DurationHours,
}

/// What the caller chose for a role; the template's default for what is left out.
#[derive(Debug, Clone, Default)]
pub struct RoleChoice {
    pub count: Option<u32>,
    pub template: Option<TemplateId>,
}

impl App {
    /// Requests a cluster for the caller; its nodes are made in the background.
    #[tracing::instrument(skip_all, fields(cluster), err)]
    pub async fn request_cluster(
        &self,
        caller: &Caller,
        input: ClusterRequest,
    ) -> Result<ClusterRead, Error> {
        let template = self.clusters.get(&input.template).ok_or_else(|| {
            let known: Vec<&str> = self
                .clusters
                .templates()
                .iter()
                .map(|t| t.name.as_str())
                .collect();
            Error::invalid(
                "template",
                format!(
                    "{:?} is not a cluster template (there are: {})",
                    input.template,
                    known.join(", ")
                ),
            )
        })?;
        let (topology, rows) = self.resolve(template, &input).await?;
        let nodes = self.node_settings(caller, &input, &topology).await?;
        let sized: Vec<(&TemplateRow, u32)> = topology
            .roles
            .iter()
            .zip(&rows)
            .map(|(role, row)| (row, role.count))
            .collect();
        crate::policy::admit_many(self, &caller.principal, &sized, input.duration.get().into())
            .await?;
        let id = input.id.unwrap_or_default();
        tracing::Span::current().record("cluster", tracing::field::display(id));
        let command = ClusterCommand::Request {
            id,
            template: TemplateRef {
                name: template.name.clone(),
                version: version_of(template),
            },
            topology,
            nodes: Box::new(nodes),
            provider: input.provider.clone(),
            owner: caller.principal.user,
            at: OffsetDateTime::now_utc(),
        };
        match store::execute::<Cluster>(&self.pool, id, command, &caller.metadata()).await {
            Ok(committed) => {
                let position = committed.last_position();
                self.remember_write(caller.principal.user, position).await;
            }
            Err(CommandError::Rejected(ClusterError::AlreadyRequested)) => {
                let read = self.cluster(caller, id).await?;
                if read.requested.template.name != input.template {
                    return Err(Error::Conflict(format!(
                        "a cluster with id {id} exists already, requested with other values"
                    )));
                }
                return Ok(read);
            }
            Err(CommandError::Rejected(e)) => {
                return Err(Error::invalid("template", e.to_string()))
            }
            Err(e) => return Err(crate::command_not_stored(e)),
        }
        self.cluster(caller, id).await
    }

    /// The template resolved for the request: each role's count and provider template
    /// (checked against the catalog), the stages and gates; and each role's catalog row.
    async fn resolve(
        &self,
        template: &ClusterTemplate,
        input: &ClusterRequest,
    ) -> Result<(Topology, Vec<TemplateRow>), Error> {
        let provider = &input.provider;
        self.check_provider(provider).await?;
        let asked: BTreeMap<String, u32> = input
            .roles
            .iter()
            .filter_map(|(role, choice)| Some((role.clone(), choice.count?)))
            .collect();
        if let Some(unknown) = input.roles.keys().find(|r| template.role(r).is_none()) {
            let reason = format!("{} has no role {unknown:?}", template.name);
            return Err(Error::invalid("roles", reason));
        }
        let counts = template
            .resolve_counts(&asked)
            .map_err(|reason| Error::invalid("roles", reason))?;
        let mut roles = vec![];
        let mut rows = vec![];
        for role in &template.roles {
            let field = format!("roles.{}.template", role.name);
            let chosen = input.roles.get(&role.name).and_then(|c| c.template.clone());
            let id = match chosen {
                Some(t) if role.templates.iter().any(|x| x == t.as_str()) => t,
                Some(t) => {
                    let reason = format!(
                        "{:?} is not one of the role's templates ({})",
                        t.as_str(),
                        role.templates.join(", ")
                    );
                    return Err(Error::invalid(&field, reason));
                }
                None => self
                    .first_enabled(provider, &role.templates)
                    .await?
                    .ok_or_else(|| {
                        let reason = format!(
                            "none of {} is an enabled template of {:?}",
                            role.templates.join(", "),
                            provider.as_str()
                        );
                        Error::invalid(&field, reason)
                    })?,
            };
            let row = store::catalog::template(&self.pool, provider, &id)
                .await?
                .filter(|t| t.enabled)
                .ok_or_else(|| {
                    let reason = format!(
                        "{:?} is not an enabled template of {:?}",
                        id.as_str(),
                        provider.as_str()
                    );
                    Error::invalid(&field, reason)
                })?;
            let (min, max) = match role.count {
                Count::Fixed(n) => (n, n),
                Count::Range { min, max, .. } => (min, max),
            };
            roles.push(RoleSpec {
                name: RoleName::parse(&role.name)?,
                count: counts.get(&role.name).copied().unwrap_or(min),
                min,
                max,
                template: id,
                taskservs: role
                    .taskservs
                    .iter()
                    .map(|t| TaskservRequest {
                        name: t.name.clone(),
                        params: t.params.clone(),
                    })
                    .collect(),
            });
            rows.push(row);
        }
        Ok((topology_of(template, roles)?, rows))
    }

    /// The first of `ids` that is an enabled template of `provider`.
    async fn first_enabled(
        &self,
        provider: &ProviderId,
        ids: &[String],
    ) -> Result<Option<TemplateId>, Error> {
        for id in ids {
            let Ok(id) = TemplateId::parse(id) else {
                continue;
            };
            let row = store::catalog::template(&self.pool, provider, &id).await?;
            if row.is_some_and(|r| r.enabled) {
                return Ok(Some(id));
            }
        }
        Ok(None)
    }

    /// What every node is made with: the key and networks checked as for a VM, and names
    /// that fit a VM's for every node the roles may have.
    async fn node_settings(
        &self,
        caller: &Caller,
        input: &ClusterRequest,
        topology: &Topology,
    ) -> Result<NodeSettings, Error> {
        for role in &topology.roles {
            let longest = super::nodes::node_name(&input.name, &role.name, role.max.max(1) - 1);
            if longest.is_err() {
                let reason = format!(
                    "{:?} is too long for its nodes' names (<name>-{}-<index>, at most 63 characters)",
                    input.name.as_str(),
                    role.name
                );
                return Err(Error::invalid("name", reason));
            }
        }
        let ssh_public_key = match &input.ssh_key {
            SshKeyChoice::Key(key) => key.clone(),
            SshKeyChoice::Registered(id) => self.registered_key(&caller.principal, id).await?,
        };
        let allow_ssh_from = crate::network::allowed_networks(
            self.widest_prefix,
            &input.allow_ssh_from,
            &caller.client_addr,
        )?;
        Ok(NodeSettings {
            name: input.name.clone(),
            ssh_public_key,
            allow_ssh_from,
            duration_hours: input.duration,
        })
    }
}

/// The stages, gates and failure rule of `template` over the resolved `roles`.
fn topology_of(template: &ClusterTemplate, roles: Vec<RoleSpec>) -> Result<Topology, Error> {
    let stages = template
        .order
        .iter()
        .map(|stage| stage.iter().map(|r| RoleName::parse(r)).collect())
        .collect::<Result<Vec<Vec<RoleName>>, _>>()?;
    let gates = template
        .health_gates
        .iter()
        .map(|g| {
            Ok(GateSpec {
                role: RoleName::parse(&g.role)?,
                taskserv: g.taskserv.clone(),
                nodes: match g.nodes {
                    ::clusters::Nodes::All => GateNodes::All,
                    ::clusters::Nodes::Count(n) => GateNodes::Count(n),
                },
                within_secs: g.within_secs,
            })
        })
        .collect::<Result<Vec<_>, domain::provisioning::ValueError>>()?;
    let on_failure = match template.on_failure {
        ::clusters::OnFailure::Rollback => OnFailure::Rollback,
        ::clusters::OnFailure::Keep => OnFailure::Keep,
    };
    let topology = Topology {
        roles,
        stages,
        gates,
        on_failure,
    };
    topology
        .validate()
        .map_err(|e| Error::invalid("roles", e.to_string()))?;
    Ok(topology)
}

/// The template's content hash, so a later edit of its file is told apart in the events.
fn version_of(template: &ClusterTemplate) -> String {
    let text = serde_json::to_vec(template).unwrap_or_default();
    format!("sha256:{}", hex::encode(&Sha256::digest(&text)[..8]))
}
