//! A cluster's owner (or an admin) destroys it or scales a role; the coordinator carries it
//! out (nodes destroyed, added or removed).

use domain::cluster::{Cluster, ClusterCommand, ClusterError, ClusterId, RoleName};

use super::{not_found, ClusterRead};
use crate::{App, Caller, Error};

impl App {
    /// Destroys every node of the cluster; it ends `destroyed` once all are.
    #[tracing::instrument(skip_all, fields(cluster = %id), err)]
    pub async fn destroy_cluster(
        &self,
        caller: &Caller,
        id: ClusterId,
    ) -> Result<ClusterRead, Error> {
        self.cluster(caller, id).await?;
        self.cluster_command(caller, id, ClusterCommand::RequestDestroy)
            .await?;
        self.cluster(caller, id).await
    }

    /// Gives `role` `count` nodes, within its range: nodes added (the caller's limits
    /// checked for all of them first), or the last ones destroyed.
    #[tracing::instrument(skip_all, fields(cluster = %id), err)]
    pub async fn scale_cluster(
        &self,
        caller: &Caller,
        id: ClusterId,
        role: &str,
        count: u32,
    ) -> Result<ClusterRead, Error> {
        let read = self.cluster(caller, id).await?;
        let topology = &read.requested.topology;
        let spec = RoleName::parse(role)
            .ok()
            .and_then(|r| topology.role(&r))
            .ok_or_else(|| {
                let known: Vec<&str> = topology.roles.iter().map(|r| r.name.as_str()).collect();
                let reason = format!(
                    "the cluster has no role {role:?} (its roles: {})",
                    known.join(", ")
                );
                Error::invalid("role", reason)
            })?;
        if count < spec.min || count > spec.max {
            let reason = format!(
                "{count} nodes is outside role {}'s range {} to {}",
                spec.name, spec.min, spec.max
            );
            return Err(Error::invalid("count", reason));
        }
        if count > spec.count {
            let row =
                store::catalog::template(&self.pool, &read.requested.provider, &spec.template)
                    .await?
                    .ok_or_else(|| {
                        Error::invalid(
                            "role",
                            format!("its template {} is gone", spec.template.as_str()),
                        )
                    })?;
            let hours = read.requested.nodes.duration_hours.get().into();
            crate::policy::admit_many(
                self,
                &caller.principal,
                &[(&row, count - spec.count)],
                hours,
            )
            .await?;
        }
        let command = ClusterCommand::Scale {
            role: spec.name.clone(),
            count,
        };
        self.cluster_command(caller, id, command).await?;
        self.cluster(caller, id).await
    }

    async fn cluster_command(
        &self,
        caller: &Caller,
        id: ClusterId,
        command: ClusterCommand,
    ) -> Result<(), Error> {
        match store::execute::<Cluster>(&self.pool, id, command, &caller.metadata()).await {
            Ok(committed) => {
                self.remember_write(caller.principal.user, committed.last_position())
                    .await;
                Ok(())
            }
            Err(store::CommandError::Rejected(e)) => Err(match e {
                ClusterError::NotFound => not_found(id),
                e => Error::Conflict(e.to_string()),
            }),
            Err(e) => Err(crate::command_not_stored(e)),
        }
    }
}
