//! Clusters as the event store holds them. A cluster's state is its aggregate, loaded with
//! [`crate::load`]; these queries find which clusters there are (clusters are few, so they
//! are read from the events table rather than a read model of their own).

use domain::cluster::{Cluster, ClusterId};
use domain::identity::UserId;
use domain::provisioning::{Provisioning, VmId};
use sqlx::PgPool;

use crate::command::Stored;

impl Stored for Cluster {
    /// A cluster has a few events per node.
    const SNAPSHOT_EVERY: Option<u64> = None;
}

/// How many clusters a list shows at most, newest first.
pub const LIST_LIMIT: i64 = 500;

/// The clusters requested by `owner` (every cluster for `None`), newest first.
#[tracing::instrument(skip_all, err)]
pub async fn ids(pool: &PgPool, owner: Option<UserId>) -> Result<Vec<ClusterId>, sqlx::Error> {
    let rows: Vec<(String,)> = sqlx::query_as(
        "SELECT aggregate_id FROM events
         WHERE aggregate_type = $1 AND sequence = 1
           AND ($2::text IS NULL OR payload::jsonb->'data'->>'owner' = $2)
         ORDER BY position DESC LIMIT $3",
    )
    .bind(<Cluster as cqrs_es::Aggregate>::TYPE)
    .bind(owner.map(|o| o.to_string()))
    .bind(LIST_LIMIT)
    .fetch_all(pool)
    .await?;
    Ok(rows
        .into_iter()
        .filter_map(|(id,)| id.parse().ok())
        .collect())
}

/// The clusters the coordinator may still have work for: all but those whose last event
/// ends them (`ClusterFailed`, `ClusterDestroyed`).
#[tracing::instrument(skip_all, err)]
pub async fn active(pool: &PgPool) -> Result<Vec<ClusterId>, sqlx::Error> {
    let rows: Vec<(String,)> = sqlx::query_as(
        "SELECT aggregate_id FROM (
             SELECT DISTINCT ON (aggregate_id) aggregate_id, event_type FROM events
             WHERE aggregate_type = $1
             ORDER BY aggregate_id, sequence DESC
         ) last
         WHERE event_type NOT IN ('ClusterFailed', 'ClusterDestroyed')",
    )
    .bind(<Cluster as cqrs_es::Aggregate>::TYPE)
    .fetch_all(pool)
    .await?;
    Ok(rows
        .into_iter()
        .filter_map(|(id,)| id.parse().ok())
        .collect())
}

/// The cluster VM `vm` is a node of, from its first event (`Requested`, whose spec names
/// it); `None` for a VM of its own, or one that does not exist.
pub async fn cluster_of_vm(pool: &PgPool, vm: VmId) -> Result<Option<ClusterId>, sqlx::Error> {
    let row: Option<(Option<String>,)> = sqlx::query_as(
        "SELECT payload::jsonb->'data'->'spec'->'cluster'->>'id' FROM events
         WHERE aggregate_type = $1 AND aggregate_id = $2 AND sequence = 1",
    )
    .bind(<Provisioning as cqrs_es::Aggregate>::TYPE)
    .bind(vm.to_string())
    .fetch_optional(pool)
    .await?;
    Ok(row.and_then(|(id,)| id?.parse().ok()))
}
