//! Reading the events of the `Provisioning` aggregate: its audit history and what the API and
//! the dispatcher check against the source of truth.

use cqrs_es::Aggregate;
use domain::identity::UserId;
use domain::provisioning::{Provisioning, ProvisioningEvent, VmId};
use serde::Serialize;
use sqlx::PgPool;
use time::OffsetDateTime;

/// Who owns VM `vm`: the owner its `Requested` event (its first) names, the built-in admin
/// for events of versions before owners; `None` if there is no such VM. Read from the
/// events, not the read model, so a VM is its owner's as soon as its request committed.
#[tracing::instrument(skip_all, fields(vm_id = %vm), err)]
pub async fn vm_owner(pool: &PgPool, vm: VmId) -> Result<Option<UserId>, sqlx::Error> {
    let payload: Option<serde_json::Value> = sqlx::query_scalar(
        "SELECT payload::jsonb FROM events
         WHERE aggregate_type = $1 AND aggregate_id = $2 AND sequence = 1",
    )
    .bind(Provisioning::TYPE)
    .bind(vm.to_string())
    .fetch_optional(pool)
    .await?;
    let Some(payload) = payload else {
        return Ok(None);
    };
    match serde_json::from_value(payload).map_err(|e| sqlx::Error::Decode(Box::new(e)))? {
        ProvisioningEvent::Requested { spec, .. } => Ok(Some(spec.owner)),
        // Every VM's first event is its request; anything else is no VM to show.
        _ => Ok(None),
    }
}

/// The sequence of the last event of a VM, 0 if it has none.
pub async fn last_sequence(pool: &PgPool, vm: VmId) -> Result<u64, sqlx::Error> {
    let seq: Option<i64> = sqlx::query_scalar(
        "SELECT max(sequence) FROM events WHERE aggregate_type = $1 AND aggregate_id = $2",
    )
    .bind(Provisioning::TYPE)
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
         WHERE aggregate_type = $1 AND aggregate_id = $2
           AND metadata->>'correlation_id' = $3",
    )
    .bind(Provisioning::TYPE)
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
    audit_events(pool, Provisioning::TYPE, &vm.to_string(), after, limit).await
}

/// The audit history of one aggregate after `after`, in order, at most `limit`.
pub async fn audit_events(
    pool: &PgPool,
    aggregate_type: &str,
    aggregate_id: &str,
    after: u64,
    limit: i64,
) -> Result<Vec<AuditEvent>, sqlx::Error> {
    let rows: Vec<AuditRow> = sqlx::query_as(
        "SELECT sequence, event_type, recorded_at, metadata->>'actor' AS actor,
                coalesce(payload::jsonb->'data', '{}'::jsonb) AS data
         FROM events
         WHERE aggregate_type = $1 AND aggregate_id = $2 AND sequence > $3
         ORDER BY sequence LIMIT $4",
    )
    .bind(aggregate_type)
    .bind(aggregate_id)
    .bind(i64::try_from(after).unwrap_or(i64::MAX))
    .bind(limit)
    .fetch_all(pool)
    .await?;
    Ok(rows.into_iter().map(AuditEvent::from).collect())
}

#[derive(sqlx::FromRow)]
struct AuditRow {
    sequence: i64,
    event_type: String,
    recorded_at: OffsetDateTime,
    actor: Option<String>,
    data: serde_json::Value,
}

impl From<AuditRow> for AuditEvent {
    fn from(row: AuditRow) -> Self {
        AuditEvent {
            sequence: u64::try_from(row.sequence).unwrap_or(0),
            event_type: row.event_type,
            recorded_at: row.recorded_at,
            actor: row.actor,
            data: row.data,
        }
    }
}

/// The events of VM `vm` up to sequence `upto`, in order, without its Terraform lines:
/// what its status and address follow from (a line changes neither), so the live pushes
/// can fold a VM's state without reading every line it ever logged.
#[tracing::instrument(skip_all, fields(vm_id = %vm), err)]
pub async fn status_history(
    pool: &PgPool,
    vm: VmId,
    upto: u64,
) -> Result<Vec<ProvisioningEvent>, sqlx::Error> {
    // As the feed reads them: text, upcast from the version they were stored at.
    let rows: Vec<(String, String, String)> = sqlx::query_as(
        "SELECT event_type, event_version, payload::text FROM events
         WHERE aggregate_type = $1 AND aggregate_id = $2 AND sequence <= $3
           AND event_type <> 'LogLine'
         ORDER BY sequence",
    )
    .bind(Provisioning::TYPE)
    .bind(vm.to_string())
    .bind(upto as i64)
    .fetch_all(pool)
    .await?;
    rows.into_iter()
        .map(|(event_type, version, payload)| {
            let payload =
                serde_json::from_str(&payload).map_err(|e| sqlx::Error::Decode(Box::new(e)))?;
            let payload = crate::upcast::upcast(&event_type, &version, payload);
            serde_json::from_value(payload).map_err(|e| sqlx::Error::Decode(Box::new(e)))
        })
        .collect()
}
