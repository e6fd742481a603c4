//! Follows the events table in commit order, for the relay and the projector.
//!
//! Rows are read in `(txid, position)` order, and only rows whose transaction id is below
//! the oldest transaction still running (`pg_snapshot_xmin`). Those rows are final: no
//! transaction can add one before them any more. A follower that keeps a cursor in that
//! order therefore never skips a row that a slow concurrent writer commits later, which a
//! cursor on `position` alone would.

use std::time::Duration;

use cqrs_es::Aggregate;
use domain::provisioning::{Provisioning, ProvisioningEvent, ValueError, VmId};
use sqlx::postgres::PgListener;
use sqlx::{PgExecutor, PgPool};
use time::OffsetDateTime;

/// A place in the commit order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Cursor {
    pub txid: i64,
    pub position: i64,
}

/// A committed event as the feed delivers it, of any aggregate type.
#[derive(Debug, Clone)]
pub struct FeedEvent {
    pub cursor: Cursor,
    pub aggregate_type: String,
    pub aggregate_id: String,
    pub sequence: u64,
    pub event_type: String,
    /// The payload as stored: `{"type": ..., "data": ...}`.
    pub payload: serde_json::Value,
    pub metadata: serde_json::Value,
    pub recorded_at: OffsetDateTime,
}

impl FeedEvent {
    pub fn actor(&self) -> Option<String> {
        self.metadata
            .get("actor")
            .and_then(|a| a.as_str())
            .map(str::to_owned)
    }

    /// The VM and its event, for an event of the `Provisioning` aggregate.
    pub fn provisioning(&self) -> Result<Option<(VmId, ProvisioningEvent)>, UndecodableEvent> {
        if self.aggregate_type != Provisioning::TYPE {
            return Ok(None);
        }
        let undecodable = |reason: String| UndecodableEvent {
            aggregate_type: self.aggregate_type.clone(),
            aggregate_id: self.aggregate_id.clone(),
            sequence: self.sequence,
            reason,
        };
        let vm = self
            .aggregate_id
            .parse()
            .map_err(|e: ValueError| undecodable(e.to_string()))?;
        let event =
            serde_json::from_value(self.payload.clone()).map_err(|e| undecodable(e.to_string()))?;
        Ok(Some((vm, event)))
    }
}

/// A stored event its aggregate's types cannot read: written by a newer version, or by hand.
#[derive(Debug, thiserror::Error)]
#[error("event {aggregate_type}/{aggregate_id}/{sequence} cannot be read: {reason}")]
pub struct UndecodableEvent {
    pub aggregate_type: String,
    pub aggregate_id: String,
    pub sequence: u64,
    pub reason: String,
}

type Row = (
    i64,
    i64,
    String,
    String,
    i64,
    String,
    serde_json::Value,
    serde_json::Value,
    OffsetDateTime,
);

/// The next final events after `after`, at most `limit`.
#[tracing::instrument(skip_all, err)]
pub async fn read_after(
    pool: &PgPool,
    after: Cursor,
    limit: i64,
) -> Result<Vec<FeedEvent>, sqlx::Error> {
    let rows: Vec<Row> = sqlx::query_as(
        "SELECT txid::text::bigint, position, aggregate_type, aggregate_id, sequence, event_type,
                payload::jsonb, metadata::jsonb, recorded_at
         FROM events
         WHERE (txid, position) > ($1::text::xid8, $2)
           AND txid < pg_snapshot_xmin(pg_current_snapshot())
         ORDER BY txid, position
         LIMIT $3",
    )
    .bind(after.txid.to_string())
    .bind(after.position)
    .bind(limit)
    .fetch_all(pool)
    .await?;
    Ok(rows.into_iter().map(decode).collect())
}

fn decode(row: Row) -> FeedEvent {
    let (
        txid,
        position,
        aggregate_type,
        aggregate_id,
        sequence,
        event_type,
        payload,
        metadata,
        recorded_at,
    ) = row;
    FeedEvent {
        cursor: Cursor { txid, position },
        aggregate_type,
        aggregate_id,
        sequence: sequence as u64,
        event_type,
        payload,
        metadata,
        recorded_at,
    }
}

/// Where the follower `name` got to; the start if it never saved a checkpoint.
pub async fn load_checkpoint(pool: &PgPool, name: &str) -> Result<Cursor, sqlx::Error> {
    let row: Option<(i64, i64)> = sqlx::query_as(
        "SELECT txid::text::bigint, position FROM event_checkpoints WHERE name = $1",
    )
    .bind(name)
    .fetch_optional(pool)
    .await?;
    Ok(row.map_or(Cursor::default(), |(txid, position)| Cursor {
        txid,
        position,
    }))
}

pub async fn save_checkpoint(
    executor: impl PgExecutor<'_>,
    name: &str,
    cursor: Cursor,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO event_checkpoints (name, txid, position, updated_at)
         VALUES ($1, $2::text::xid8, $3, now())
         ON CONFLICT (name) DO UPDATE
         SET txid = excluded.txid, position = excluded.position, updated_at = now()",
    )
    .bind(name)
    .bind(cursor.txid.to_string())
    .bind(cursor.position)
    .execute(executor)
    .await?;
    Ok(())
}

/// Wakes a follower when events are committed, or after `poll` at the latest.
pub struct Wakeup {
    listener: Option<PgListener>,
    pool: PgPool,
    poll: Duration,
}

impl Wakeup {
    pub fn new(pool: PgPool, poll: Duration) -> Self {
        Self {
            listener: None,
            pool,
            poll,
        }
    }

    pub async fn wait(&mut self) {
        if self.listener.is_none() {
            if let Ok(mut listener) = PgListener::connect_with(&self.pool).await {
                if listener.listen("events").await.is_ok() {
                    self.listener = Some(listener);
                }
            }
        }
        let Some(listener) = self.listener.as_mut() else {
            tokio::time::sleep(self.poll).await;
            return;
        };
        match tokio::time::timeout(self.poll, listener.recv()).await {
            Ok(Ok(_)) | Err(_) => {}
            Ok(Err(_)) => self.listener = None,
        }
    }
}
