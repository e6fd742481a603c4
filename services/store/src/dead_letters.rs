//! Dead letters: events a follower of the events table could not handle (undecodable, or
//! too large to publish). The follower parks such an event and moves its checkpoint past
//! it, so one bad event never stops the others. An admin lists them and asks for a replay
//! once the cause is fixed; the follower (the lease holder, so never two at once) tries the
//! event again on its next pass and marks it resolved, or records the new error.

use serde::Serialize;
use sqlx::{PgExecutor, PgPool};
use time::OffsetDateTime;

use crate::feed::{self, FeedEvent};

/// A parked event, as admins see it.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct DeadLetter {
    pub id: i64,
    /// The follower that parked it: `relay` or `projector`.
    pub follower: String,
    pub position: i64,
    pub aggregate_type: String,
    pub aggregate_id: String,
    pub sequence: i64,
    pub error: String,
    /// How many times it failed: when parked, and at each replay that failed again.
    pub attempts: i32,
    pub parked_at: OffsetDateTime,
    pub replay_requested_at: Option<OffsetDateTime>,
    pub resolved_at: Option<OffsetDateTime>,
}

const COLUMNS: &str = "id, follower, position, aggregate_type, aggregate_id, sequence, error, \
                       attempts, parked_at, replay_requested_at, resolved_at";

/// Parks `event` for `follower` with the error that stopped it. Parking the same event
/// again (a pass repeated after a crash) counts one more attempt.
pub async fn park(
    executor: impl PgExecutor<'_>,
    follower: &str,
    event: &FeedEvent,
    error: &str,
) -> Result<(), sqlx::Error> {
    tracing::error!(
        follower,
        aggregate_type = %event.aggregate_type,
        aggregate_id = %event.aggregate_id,
        sequence = event.sequence,
        position = event.cursor.position,
        error,
        "parked an event the follower cannot handle; it continues past it"
    );
    sqlx::query(
        "INSERT INTO dead_letters
             (follower, txid, position, aggregate_type, aggregate_id, sequence, error)
         VALUES ($1, $2::text::xid8, $3, $4, $5, $6, $7)
         ON CONFLICT (follower, aggregate_type, aggregate_id, sequence) DO UPDATE
         SET error = excluded.error, attempts = dead_letters.attempts + 1,
             parked_at = now(), resolved_at = NULL",
    )
    .bind(follower)
    .bind(event.cursor.txid.to_string())
    .bind(event.cursor.position)
    .bind(&event.aggregate_type)
    .bind(&event.aggregate_id)
    .bind(event.sequence as i64)
    .bind(error)
    .execute(executor)
    .await?;
    Ok(())
}

/// The dead letters, newest first; only the unresolved ones unless `all`.
pub async fn list(pool: &PgPool, all: bool, limit: i64) -> Result<Vec<DeadLetter>, sqlx::Error> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM dead_letters
         WHERE $1 OR resolved_at IS NULL
         ORDER BY id DESC LIMIT $2"
    ))
    .bind(all)
    .bind(limit)
    .fetch_all(pool)
    .await
}

pub async fn get(pool: &PgPool, id: i64) -> Result<Option<DeadLetter>, sqlx::Error> {
    sqlx::query_as(&format!("SELECT {COLUMNS} FROM dead_letters WHERE id = $1"))
        .bind(id)
        .fetch_optional(pool)
        .await
}

/// How many events `follower` has parked and not yet replayed.
pub async fn open_count(pool: &PgPool, follower: &str) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT count(*) FROM dead_letters WHERE follower = $1 AND resolved_at IS NULL",
    )
    .bind(follower)
    .fetch_one(pool)
    .await
}

/// Asks the follower to try the event again, and wakes it. `None` if there is no such
/// dead letter or it is resolved already.
pub async fn request_replay(pool: &PgPool, id: i64) -> Result<Option<DeadLetter>, sqlx::Error> {
    let mut tx = pool.begin().await?;
    let letter: Option<DeadLetter> = sqlx::query_as(&format!(
        "UPDATE dead_letters SET replay_requested_at = now()
         WHERE id = $1 AND resolved_at IS NULL
         RETURNING {COLUMNS}"
    ))
    .bind(id)
    .fetch_optional(&mut *tx)
    .await?;
    sqlx::query("SELECT pg_notify('events', '')")
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(letter)
}

/// The dead letters of `follower` whose replay was asked for, with their events, oldest
/// first.
pub async fn replays_due(
    pool: &PgPool,
    follower: &str,
) -> Result<Vec<(i64, FeedEvent)>, sqlx::Error> {
    let due: Vec<(i64, String, String, i64)> = sqlx::query_as(
        "SELECT id, aggregate_type, aggregate_id, sequence FROM dead_letters
         WHERE follower = $1 AND resolved_at IS NULL AND replay_requested_at IS NOT NULL
         ORDER BY position LIMIT 100",
    )
    .bind(follower)
    .fetch_all(pool)
    .await?;
    let mut events = vec![];
    for (id, aggregate_type, aggregate_id, sequence) in due {
        match feed::read_one(pool, &aggregate_type, &aggregate_id, sequence).await? {
            Some(event) => events.push((id, event)),
            // The event is gone (deleted by hand): nothing is left to replay.
            None => resolve(pool, id).await?,
        }
    }
    Ok(events)
}

/// The replay of dead letter `id` succeeded.
pub async fn resolve(executor: impl PgExecutor<'_>, id: i64) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE dead_letters SET resolved_at = now(), replay_requested_at = NULL WHERE id = $1",
    )
    .bind(id)
    .execute(executor)
    .await?;
    Ok(())
}

/// The replay of dead letter `id` failed again with `error`: it waits for another request.
pub async fn replay_failed(
    executor: impl PgExecutor<'_>,
    id: i64,
    error: &str,
) -> Result<(), sqlx::Error> {
    tracing::error!(id, error, "a replayed dead letter failed again");
    sqlx::query(
        "UPDATE dead_letters
         SET error = $2, attempts = attempts + 1, replay_requested_at = NULL
         WHERE id = $1",
    )
    .bind(id)
    .bind(error)
    .execute(executor)
    .await?;
    Ok(())
}
