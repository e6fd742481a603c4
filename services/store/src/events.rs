//! Writing and reading the events of the `Provisioning` aggregate.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use cqrs_es::persist::PersistedEventStore;
use cqrs_es::{AggregateError, CqrsFramework};
use domain::provisioning::{JobId, Provisioning, ProvisioningCommand, ProvisioningError, VmId};
use postgres_es::PostgresEventRepository;
use serde::Serialize;
use sqlx::PgPool;
use time::OffsetDateTime;

pub type ProvisioningCqrs =
    CqrsFramework<Provisioning, PersistedEventStore<PostgresEventRepository, Provisioning>>;

/// Commands load the latest snapshot plus the events after it, so a VM with thousands of
/// log lines stays cheap to load.
const SNAPSHOT_EVERY: usize = 100;

pub fn cqrs(pool: PgPool) -> Arc<ProvisioningCqrs> {
    let repo = PostgresEventRepository::new(pool);
    let store = PersistedEventStore::new_snapshot_store(repo, SNAPSHOT_EVERY);
    Arc::new(CqrsFramework::new(store, vec![], ()))
}

/// Who did it and in which request: stored with every event of a command.
#[derive(Debug, Clone)]
pub struct Metadata {
    pub actor: String,
    pub correlation_id: String,
}

impl Metadata {
    fn into_map(self) -> HashMap<String, String> {
        let now = OffsetDateTime::now_utc()
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default();
        HashMap::from([
            ("actor".to_owned(), self.actor),
            ("correlation_id".to_owned(), self.correlation_id),
            ("time".to_owned(), now),
        ])
    }
}

#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    #[error(transparent)]
    Rejected(#[from] ProvisioningError),
    #[error("the VM kept changing while the command was retried")]
    Conflict,
    #[error("event store error: {0}")]
    Store(String),
}

/// Executes a command, retrying when a concurrent writer committed first.
#[tracing::instrument(skip_all, fields(vm_id = %vm), err)]
pub async fn execute(
    cqrs: &ProvisioningCqrs,
    vm: VmId,
    command: ProvisioningCommand,
    metadata: Metadata,
) -> Result<(), CommandError> {
    let id = vm.to_string();
    let metadata = metadata.into_map();
    for attempt in 0..5u64 {
        match cqrs
            .execute_with_metadata(&id, command.clone(), metadata.clone())
            .await
        {
            Ok(()) => return Ok(()),
            Err(AggregateError::UserError(e)) => return Err(e.into()),
            Err(AggregateError::AggregateConflict) => {
                tokio::time::sleep(Duration::from_millis(5 * (attempt + 1))).await;
            }
            Err(e) => return Err(CommandError::Store(e.to_string())),
        }
    }
    Err(CommandError::Conflict)
}

/// The sequence of the last event of a VM, 0 if it has none.
pub async fn last_sequence(pool: &PgPool, vm: VmId) -> Result<u64, sqlx::Error> {
    let seq: Option<i64> = sqlx::query_scalar(
        "SELECT max(sequence) FROM events WHERE aggregate_type = 'Provisioning' AND aggregate_id = $1",
    )
    .bind(vm.to_string())
    .fetch_one(pool)
    .await?;
    Ok(seq.unwrap_or(0) as u64)
}

/// The sequence of the last event of a VM written by the request `correlation_id`.
pub async fn last_sequence_of(
    pool: &PgPool,
    vm: VmId,
    correlation_id: &str,
) -> Result<u64, sqlx::Error> {
    let seq: Option<i64> = sqlx::query_scalar(
        "SELECT max(sequence) FROM events
         WHERE aggregate_type = 'Provisioning' AND aggregate_id = $1
           AND metadata->>'correlation_id' = $2",
    )
    .bind(vm.to_string())
    .bind(correlation_id)
    .fetch_one(pool)
    .await?;
    Ok(seq.unwrap_or(0) as u64)
}

/// One event of a VM's audit history.
#[derive(Debug, Clone, Serialize)]
pub struct AuditEvent {
    pub sequence: u64,
    pub event_type: String,
    #[serde(with = "time::serde::rfc3339")]
    pub recorded_at: OffsetDateTime,
    pub actor: Option<String>,
    pub data: serde_json::Value,
}

/// The events of a VM after `after`, in order, at most `limit`.
#[tracing::instrument(skip_all, fields(vm_id = %vm), err)]
pub async fn vm_events(
    pool: &PgPool,
    vm: VmId,
    after: u64,
    limit: i64,
) -> Result<Vec<AuditEvent>, sqlx::Error> {
    audit_events(pool, "Provisioning", &vm.to_string(), after, limit).await
}

/// The audit history of one aggregate after `after`, in order, at most `limit`.
pub async fn audit_events(
    pool: &PgPool,
    aggregate_type: &str,
    aggregate_id: &str,
    after: u64,
    limit: i64,
) -> Result<Vec<AuditEvent>, sqlx::Error> {
    let rows: Vec<(
        i64,
        String,
        OffsetDateTime,
        Option<String>,
        serde_json::Value,
    )> = sqlx::query_as(
        "SELECT sequence, event_type, recorded_at, metadata->>'actor',
                coalesce(payload::jsonb->'data', '{}'::jsonb)
         FROM events
         WHERE aggregate_type = $1 AND aggregate_id = $2 AND sequence > $3
         ORDER BY sequence LIMIT $4",
    )
    .bind(aggregate_type)
    .bind(aggregate_id)
    .bind(after as i64)
    .bind(limit)
    .fetch_all(pool)
    .await?;
    Ok(rows
        .into_iter()
        .map(
            |(sequence, event_type, recorded_at, actor, data)| AuditEvent {
                sequence: sequence as u64,
                event_type,
                recorded_at,
                actor,
                data,
            },
        )
        .collect())
}

/// Whether a job is queued and waits for its runner: not started, not ended (failed by
/// the dispatcher or the watchdog, say). Read from the events, the source of truth, so a
/// lagging read model cannot hide a job.
pub async fn job_waiting(pool: &PgPool, vm: VmId, job: JobId) -> Result<bool, sqlx::Error> {
    let (queued, moved_on): (Option<bool>, Option<bool>) = sqlx::query_as(
        "SELECT bool_or(event_type = 'JobQueued'),
                bool_or(event_type IN ('JobStarted', 'Applied', 'Failed', 'Destroyed'))
         FROM events
         WHERE aggregate_type = 'Provisioning' AND aggregate_id = $1
           AND (payload::jsonb->'data'->>'job_id')::bigint = $2",
    )
    .bind(vm.to_string())
    .bind(i64::from(job.get()))
    .fetch_one(pool)
    .await?;
    Ok(queued.unwrap_or(false) && !moved_on.unwrap_or(false))
}
