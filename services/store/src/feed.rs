//! Follows the events table in commit order, for the relay and the projector.
//!
//! Rows are read in `(txid, position)` order, and only rows whose transaction id is below
//! the oldest transaction still running (`pg_snapshot_xmin`). Those rows are final: no
//! transaction can add one before them any more. A follower that keeps a cursor in that
//! order therefore never skips a row that a slow concurrent writer commits later, which a
//! cursor on `position` alone would.

use std::time::Duration;

use domain::provisioning::{ProvisioningEvent, VmId};
use sqlx::postgres::PgListener;
use sqlx::{PgExecutor, PgPool};
use time::OffsetDateTime;
use tokio_util::sync::CancellationToken;

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
    pub fn provisioning(&self) -> Result<Option<(VmId, ProvisioningEvent)>, sqlx::Error> {
        if self.aggregate_type != "Provisioning" {
            return Ok(None);
        }
        let decode = |e: Box<dyn std::error::Error + Send + Sync>| sqlx::Error::Decode(e);
        let vm = self.aggregate_id.parse().map_err(|e| decode(Box::new(e)))?;
        let event =
            serde_json::from_value(self.payload.clone()).map_err(|e| decode(Box::new(e)))?;
        Ok(Some((vm, event)))
    }
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

/// Holds a Postgres advisory lock for as long as it lives, so that a role that must run once
/// (the relay, the projector) runs once however many replicas start.
pub struct Lease {
    // Detached from the pool: closing it (on drop) releases the lock; a pooled connection
    // would go back to the pool still holding it.
    conn: sqlx::PgConnection,
}

impl Lease {
    /// Tries once to take the lease `name`.
    pub async fn try_acquire(pool: &PgPool, name: &str) -> Result<Option<Lease>, sqlx::Error> {
        let mut conn = pool.acquire().await?;
        let got: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock(hashtext($1))")
            .bind(name)
            .fetch_one(&mut *conn)
            .await?;
        Ok(got.then(|| Lease {
            conn: conn.detach(),
        }))
    }

    /// Gives the lease up now, rather than when the server notices the closed socket.
    pub async fn release(self) {
        use sqlx::Connection;
        let _ = self.conn.close().await;
    }

    /// Whether the lock is still held: a lost session (a Postgres restart, a network cut)
    /// released it, and another replica may hold it now.
    pub async fn is_held(&mut self) -> bool {
        sqlx::query("SELECT 1")
            .execute(&mut self.conn)
            .await
            .is_ok()
    }
}

/// Runs `pass` for as long as `cancel` allows, as the one holder of the lease `name`:
/// again at once while it finds work, after a commit notification (or a poll) when it
/// found none, and a second after an error.
pub async fn follow<F, Fut, E>(pool: &PgPool, name: &str, cancel: &CancellationToken, mut pass: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<usize, E>>,
    E: std::fmt::Display,
{
    while !cancel.is_cancelled() {
        let Some(lease) = acquire(pool, name, cancel).await else {
            return;
        };
        if let Some(lease) = run_while_held(pool, name, cancel, lease, &mut pass).await {
            lease.release().await;
        }
    }
}

/// Waits until this replica holds the lease `name`; `None` when cancelled first.
async fn acquire(pool: &PgPool, name: &str, cancel: &CancellationToken) -> Option<Lease> {
    loop {
        match Lease::try_acquire(pool, name).await {
            Ok(Some(lease)) => return Some(lease),
            Ok(None) => tracing::debug!(name, "another replica holds the lease"),
            Err(e) => tracing::warn!(name, error = %e, "could not ask for the lease"),
        }
        tokio::select! {
            _ = cancel.cancelled() => return None,
            _ = tokio::time::sleep(Duration::from_secs(2)) => {}
        }
    }
}

/// Runs passes until cancelled (giving the lease back) or until the lease's session is
/// lost (`None`).
async fn run_while_held<F, Fut, E>(
    pool: &PgPool,
    name: &str,
    cancel: &CancellationToken,
    mut lease: Lease,
    pass: &mut F,
) -> Option<Lease>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<usize, E>>,
    E: std::fmt::Display,
{
    let mut wakeup = Wakeup::new(pool.clone(), Duration::from_millis(500));
    while !cancel.is_cancelled() {
        if !lease.is_held().await {
            tracing::warn!(name, "lost the lease's session; taking it again");
            return None;
        }
        let pause = match pass().await {
            Ok(0) => None,
            Ok(_) => continue,
            Err(e) => {
                tracing::error!(name, error = %e, "pass failed; retrying");
                Some(Duration::from_secs(1))
            }
        };
        tokio::select! {
            _ = cancel.cancelled() => break,
            _ = wakeup.wait(), if pause.is_none() => {}
            _ = tokio::time::sleep(pause.unwrap_or_default()), if pause.is_some() => {}
        }
    }
    Some(lease)
}
