//! The platform's audit history: every event of every aggregate in commit order, filtered
//! and paged by position, for `GET /api/v1/audit`, its export and a VM's history.
//!
//! Commit order is the feed's `(txid, position)` order, and only events below the commit
//! horizon are shown (see [`crate::feed::horizon`]): a page never shows an event and then,
//! on the next page, misses an earlier one a slower transaction committed meanwhile. A page
//! starts after the event at a position (the last one a client has); the indexes of
//! migration 0017 keep each filter on that order.

use domain::provisioning::{ProviderId, VmId};
use domain::AggregateKind;
use sqlx::{PgPool, Postgres, QueryBuilder};
use time::OffsetDateTime;

/// Which events an audit page shows. Empty fields select everything.
#[derive(Debug, Clone, Default)]
pub struct AuditFilter {
    /// Only events whose metadata names this actor (`admin`, `runner`, ...).
    pub actor: Option<String>,
    /// Only events of one of these types; all when empty.
    pub types: Vec<String>,
    /// Only the events of this VM.
    pub vm: Option<VmId>,
    /// Only the events of VMs requested on this provider.
    pub provider: Option<ProviderId>,
    /// Only events recorded at or after this time.
    pub from: Option<OffsetDateTime>,
    /// Only events recorded before this time.
    pub to: Option<OffsetDateTime>,
    /// Leave Terraform's lines (`LogLine`) out.
    pub exclude_logs: bool,
}

impl AuditFilter {
    /// Whether a followed event passes, its provider aside (the caller knows the VMs'
    /// providers): the same selection as a page's query, for the live stream of events.
    pub fn matches(&self, event: &crate::feed::FeedEvent) -> bool {
        (self.actor.is_none() || event.actor() == self.actor)
            && (self.types.is_empty() || self.types.contains(&event.event_type))
            && self
                .vm
                .is_none_or(|vm| of_a_vm(event.kind()) && event.aggregate_id == vm.to_string())
            && (self.provider.is_none() || of_a_vm(event.kind()))
            && self.from.is_none_or(|from| event.recorded_at >= from)
            && self.to.is_none_or(|to| event.recorded_at < to)
            && !(self.exclude_logs && event.event_type == "LogLine")
    }
}

/// Whether events of `kind` are a VM's, and so selected by the `vm` and `provider` filters
/// (the SQL of [`push_filter`] selects the same kinds).
fn of_a_vm(kind: Option<AggregateKind>) -> bool {
    match kind {
        Some(AggregateKind::Vm) => true,
        Some(AggregateKind::Catalog | AggregateKind::Cluster) | None => false,
    }
}

/// Where a page starts.
#[derive(Debug, Clone, Copy)]
pub enum Start {
    /// After the event at this position (0: from the first event).
    Position(i64),
    /// After this sequence of the filter's VM (a VM's history pages by sequence).
    Sequence(u64),
}

/// One event as the audit history shows it: as stored, with where it sits.
#[derive(Debug, Clone, serde::Serialize, sqlx::FromRow)]
pub struct AuditEntry {
    pub position: i64,
    pub aggregate_type: String,
    pub aggregate_id: String,
    pub sequence: i64,
    pub event_type: String,
    pub event_version: String,
    pub recorded_at: OffsetDateTime,
    pub actor: Option<String>,
    pub correlation_id: Option<String>,
    pub data: serde_json::Value,
}

/// A start position no event has (a client's mistake).
#[derive(Debug, thiserror::Error)]
#[error("no event has position {0}")]
pub struct UnknownPosition(pub i64);

#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    #[error(transparent)]
    UnknownPosition(#[from] UnknownPosition),
    #[error(transparent)]
    Database(#[from] sqlx::Error),
}

/// The `(txid, position)` of the event at `position`, where a page after it starts.
async fn cursor_of(pool: &PgPool, position: i64) -> Result<(i64, i64), AuditError> {
    if position == 0 {
        return Ok((0, 0));
    }
    let txid: Option<i64> =
        sqlx::query_scalar("SELECT txid::text::bigint FROM events WHERE position = $1")
            .bind(position)
            .fetch_optional(pool)
            .await?;
    let txid = txid.ok_or(UnknownPosition(position))?;
    Ok((txid, position))
}

/// The events `filter` selects after `start`, below `horizon`, in commit order, at most
/// `limit`. `horizon` is [`crate::feed::horizon`] (an export takes it once, at its start).
#[tracing::instrument(skip_all, err)]
pub async fn page(
    pool: &PgPool,
    filter: &AuditFilter,
    start: Start,
    horizon: i64,
    limit: i64,
) -> Result<Vec<AuditEntry>, AuditError> {
    let mut query = QueryBuilder::<Postgres>::new(
        "SELECT position, aggregate_type, aggregate_id, sequence, event_type, event_version,
                recorded_at, metadata->>'actor' AS actor,
                metadata->>'correlation_id' AS correlation_id,
                coalesce(payload::jsonb->'data', '{}'::jsonb) AS data
         FROM events WHERE txid < ",
    );
    query.push_bind(horizon.to_string()).push("::xid8");
    match start {
        Start::Position(position) => {
            let (txid, position) = cursor_of(pool, position).await?;
            query
                .push(" AND (txid, position) > (")
                .push_bind(txid.to_string())
                .push("::xid8, ")
                .push_bind(position)
                .push(")");
        }
        Start::Sequence(sequence) => {
            query
                .push(" AND sequence > ")
                .push_bind(i64::try_from(sequence).unwrap_or(i64::MAX));
        }
    }
    push_filter(&mut query, filter);
    query
        .push(" ORDER BY txid, position LIMIT ")
        .push_bind(limit);
    Ok(query.build_query_as().fetch_all(pool).await?)
}

fn push_filter(query: &mut QueryBuilder<'_, Postgres>, filter: &AuditFilter) {
    if let Some(actor) = &filter.actor {
        query
            .push(" AND metadata->>'actor' = ")
            .push_bind(actor.clone());
    }
    if !filter.types.is_empty() {
        query
            .push(" AND event_type = ANY(")
            .push_bind(filter.types.clone())
            .push(")");
    }
    if let Some(vm) = filter.vm {
        query
            .push(" AND aggregate_type = ")
            .push_bind(AggregateKind::Vm.type_name())
            .push(" AND aggregate_id = ")
            .push_bind(vm.to_string());
    }
    if let Some(provider) = &filter.provider {
        // The provider is in the VM's request (its first event), nowhere else.
        query
            .push(" AND aggregate_type = ")
            .push_bind(AggregateKind::Vm.type_name())
            .push(
                " AND aggregate_id IN (SELECT r.aggregate_id FROM events r
                  WHERE r.event_type = 'Requested'
                    AND r.payload->'data'->'spec'->>'provider' = ",
            )
            .push_bind(provider.as_str().to_owned())
            .push(")");
    }
    if let Some(from) = filter.from {
        query.push(" AND recorded_at >= ").push_bind(from);
    }
    if let Some(to) = filter.to {
        query.push(" AND recorded_at < ").push_bind(to);
    }
    if filter.exclude_logs {
        query.push(" AND event_type <> 'LogLine'");
    }
}
