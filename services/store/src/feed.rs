//! Follows the events table in commit order, for the relay and the projector.
//!
//! Rows are read in `(txid, position)` order, and only rows whose transaction id is below a
//! commit horizon (see [`horizon`]): no transaction can add a row before the horizon any
//! more, so a follower that keeps a cursor in that order never skips a row that a slow
//! concurrent writer commits later, which a cursor on `position` alone would.

use std::collections::HashMap;
use std::time::Duration;

use domain::provisioning::{ProvisioningEvent, ValueError, VmId};
use domain::AggregateKind;
use serde::Deserialize;
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

    /// The request or job whose command recorded the event.
    pub fn correlation_id(&self) -> Option<String> {
        self.metadata
            .get("correlation_id")
            .and_then(|a| a.as_str())
            .map(str::to_owned)
    }

    /// The kind of aggregate it is an event of; `None` for a type this build does not know.
    pub fn kind(&self) -> Option<AggregateKind> {
        AggregateKind::parse(&self.aggregate_type)
    }

    /// Whether it is an event of a VM (the `Provisioning` aggregate).
    pub fn is_vm(&self) -> bool {
        self.kind() == Some(AggregateKind::Vm)
    }

    /// The VM and its event, for an event of the `Provisioning` aggregate.
    pub fn provisioning(&self) -> Result<Option<(VmId, ProvisioningEvent)>, UndecodableEvent> {
        if !self.is_vm() {
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
        // Read from the value in place, not from a copy of it.
        let event = ProvisioningEvent::deserialize(&self.payload)
            .map_err(|e| undecodable(e.to_string()))?;
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
    String,
    String,
    String,
    OffsetDateTime,
);

// The first column's name is `txid`, like the table's: an `ORDER BY txid` would sort by
// this text-cast output column, not by the index, reading and sorting the whole table on
// every read. Orders name `events.txid`.
const COLUMNS: &str = "txid::text::bigint, position, aggregate_type, aggregate_id, sequence, \
                       event_type, event_version, payload::text, metadata::text, recorded_at";

/// The commit horizon: every row of `events` with a smaller txid is committed or will never
/// be, so the feed may move past it.
///
/// Every writer of `events` takes `LOCK TABLE events IN ROW EXCLUSIVE MODE` before its
/// transaction has an xid (the first statement of the command path; a single `INSERT`
/// takes that lock while it is planned, also before its xid). The horizon is the smallest
/// xid among transactions holding or awaiting a lock on `events` (of this database), or,
/// when there are none, the xmax of this statement's snapshot (the next xid to be given).
/// Unlike `pg_snapshot_xmin`, a transaction open in another database, or one here that
/// never writes `events`, does not hold it back.
///
/// Why no row is skipped: the rows are read by a *later* statement (snapshot S2) than the
/// one computing the horizon H (which looked at the locks at instant L). Take a writer W
/// whose rows S2 cannot see yet, with xid X. If W had its xid at L, it held the lock then
/// (the lock comes before the xid and is kept until the end), so H <= X. Otherwise W gets
/// its xid after L, and xids only grow: X >= the next xid at L >= the snapshot's xmax >=
/// H. Either way X >= H, so `txid < H` never includes a row that could still appear.
pub async fn horizon(pool: &PgPool) -> Result<i64, sqlx::Error> {
    // pg_locks shows 32-bit xids: `behind` is how far each is below the 64-bit xmax (an
    // xid still running is within 2^31 of it; one given after the snapshot is "ahead" and
    // counts as the xmax).
    sqlx::query_scalar(
        "WITH next AS (SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint AS xmax),
              writers AS (
                  SELECT ((n.xmax - x.transactionid::text::bigint) % 4294967296
                          + 4294967296) % 4294967296 AS behind
                  FROM next n, pg_locks r
                  JOIN pg_locks x ON x.virtualtransaction = r.virtualtransaction
                                 AND x.locktype = 'transactionid'
                                 AND x.mode = 'ExclusiveLock'
                  WHERE r.locktype = 'relation'
                    AND r.database = (SELECT oid FROM pg_database
                                      WHERE datname = current_database())
                    AND r.relation = 'events'::regclass
                    AND r.mode NOT IN ('AccessShareLock', 'RowShareLock'))
         SELECT n.xmax - coalesce(max(w.behind) FILTER (WHERE w.behind < 2147483648), 0)
         FROM next n LEFT JOIN writers w ON true
         GROUP BY n.xmax",
    )
    .fetch_one(pool)
    .await
}

/// The next final events after `after`, at most `limit`.
#[tracing::instrument(skip_all, err)]
pub async fn read_after(
    pool: &PgPool,
    after: Cursor,
    limit: i64,
) -> Result<Vec<FeedEvent>, sqlx::Error> {
    // First the horizon, then the rows, in a later statement: see `horizon`.
    let horizon = horizon(pool).await?;
    let rows: Vec<Row> = sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM events
         WHERE (txid, position) > ($1::text::xid8, $2)
           AND txid < $4::text::xid8
         ORDER BY events.txid, events.position
         LIMIT $3"
    ))
    .bind(after.txid.to_string())
    .bind(after.position)
    .bind(limit)
    .bind(horizon.to_string())
    .fetch_all(pool)
    .await?;
    Ok(rows.into_iter().map(decode).collect())
}

/// The events after `after` up to and including `upto`, at most `limit`: what a stream
/// missed between two places it knows are committed.
pub async fn read_range(
    pool: &PgPool,
    after: Cursor,
    upto: Cursor,
    limit: i64,
) -> Result<Vec<FeedEvent>, sqlx::Error> {
    let rows: Vec<Row> = sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM events
         WHERE (txid, position) > ($1::text::xid8, $2)
           AND (txid, position) <= ($3::text::xid8, $4)
         ORDER BY events.txid, events.position
         LIMIT $5"
    ))
    .bind(after.txid.to_string())
    .bind(after.position)
    .bind(upto.txid.to_string())
    .bind(upto.position)
    .bind(limit)
    .fetch_all(pool)
    .await?;
    Ok(rows.into_iter().map(decode).collect())
}

/// The place of the last event below the commit horizon: where a follower that only wants
/// what comes next starts.
pub async fn head(pool: &PgPool) -> Result<Cursor, sqlx::Error> {
    let horizon = horizon(pool).await?;
    let row: Option<(i64, i64)> = sqlx::query_as(
        "SELECT txid::text::bigint, position FROM events
         WHERE txid < $1::text::xid8
         ORDER BY events.txid DESC, events.position DESC LIMIT 1",
    )
    .bind(horizon.to_string())
    .fetch_optional(pool)
    .await?;
    Ok(row.map_or(Cursor::default(), |(txid, position)| Cursor {
        txid,
        position,
    }))
}

/// The place in the commit order of the event at `position`, if there is one.
pub async fn cursor_of(pool: &PgPool, position: i64) -> Result<Option<Cursor>, sqlx::Error> {
    let row: Option<(i64, i64)> =
        sqlx::query_as("SELECT txid::text::bigint, position FROM events WHERE position = $1")
            .bind(position)
            .fetch_optional(pool)
            .await?;
    Ok(row.map(|(txid, position)| Cursor { txid, position }))
}

/// One stored event, for a replay of a dead letter.
pub async fn read_one(
    pool: &PgPool,
    aggregate_type: &str,
    aggregate_id: &str,
    sequence: i64,
) -> Result<Option<FeedEvent>, sqlx::Error> {
    let row: Option<Row> = sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM events
         WHERE aggregate_type = $1 AND aggregate_id = $2 AND sequence = $3"
    ))
    .bind(aggregate_type)
    .bind(aggregate_id)
    .bind(sequence)
    .fetch_optional(pool)
    .await?;
    Ok(row.map(decode))
}

/// Every event of one aggregate, in order, for a replay of a dead letter.
pub async fn read_aggregate(
    pool: &PgPool,
    aggregate_type: &str,
    aggregate_id: &str,
) -> Result<Vec<FeedEvent>, sqlx::Error> {
    let rows: Vec<Row> = sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM events
         WHERE aggregate_type = $1 AND aggregate_id = $2 ORDER BY sequence"
    ))
    .bind(aggregate_type)
    .bind(aggregate_id)
    .fetch_all(pool)
    .await?;
    Ok(rows.into_iter().map(decode).collect())
}

/// The provider of each VM of `vms`, read from its `Requested` event (always its first):
/// the relay publishes a VM's events under it. A VM without one is left out.
///
/// One lookup on the whole primary key per VM. Written as `aggregate_id = ANY($2)`, the
/// planner, with statistics taken while there were few VMs, walked the partial index of
/// every request (`events_requested_provider`) and filtered it: every relay pass read the
/// first event of every VM there is.
pub async fn providers_of(
    pool: &PgPool,
    vms: &[&str],
) -> Result<HashMap<String, String>, sqlx::Error> {
    let rows: Vec<(String, Option<String>)> = sqlx::query_as(
        "SELECT v.id, (SELECT e.payload #>> '{data,spec,provider}' FROM events e
                       WHERE e.aggregate_type = $1 AND e.aggregate_id = v.id
                         AND e.sequence = 1 AND e.event_type = 'Requested')
         FROM unnest($2::text[]) v (id)",
    )
    .bind(AggregateKind::Vm.type_name())
    .bind(vms)
    .fetch_all(pool)
    .await?;
    Ok(rows
        .into_iter()
        .filter_map(|(vm, provider)| Some((vm, provider?)))
        .collect())
}

/// A row as an event, its payload upcast to today's version (see [`crate::upcast`]). The
/// payload is read as text and parsed here, not cast to jsonb in the query: a payload
/// jsonb refuses (a NUL written by hand) then fails this one event, which the follower
/// parks, instead of every read.
fn decode(row: Row) -> FeedEvent {
    let (
        txid,
        position,
        aggregate_type,
        aggregate_id,
        sequence,
        event_type,
        event_version,
        payload,
        metadata,
        recorded_at,
    ) = row;
    let payload = serde_json::from_str(&payload).unwrap_or(serde_json::Value::Null);
    let payload = crate::upcast::upcast(&event_type, &event_version, payload);
    FeedEvent {
        cursor: Cursor { txid, position },
        aggregate_type,
        aggregate_id,
        sequence: sequence as u64,
        event_type,
        payload,
        metadata: serde_json::from_str(&metadata).unwrap_or(serde_json::Value::Null),
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
