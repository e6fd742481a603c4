//! Answers kept for requests sent with an `Idempotency-Key`: a retry of a committed request
//! gets the first answer again instead of running the command twice.

use std::time::Duration;

use serde_json::Value;
use sqlx::{PgPool, Postgres, Transaction};

/// How long a key is remembered. A client retries within minutes; a day leaves room for
/// a client that was down.
pub const KEEP_FOR: Duration = Duration::from_secs(24 * 60 * 60);

/// The answer to a committed request.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub status: u16,
    pub body: Value,
    /// The position of the command's last event, for read-your-writes.
    pub position: Option<i64>,
}

/// A kept answer and the request it answered.
#[derive(Debug, Clone, PartialEq)]
pub struct Kept {
    pub fingerprint: String,
    pub answer: Answer,
}

/// The answer kept under `key`, unless it expired.
pub async fn find(pool: &PgPool, key: &str) -> Result<Option<Kept>, sqlx::Error> {
    let row: Option<(String, i16, Value, Option<i64>)> = sqlx::query_as(
        "SELECT fingerprint, status, body, position FROM idempotency_keys
         WHERE key = $1 AND expires_at > now()",
    )
    .bind(key)
    .fetch_optional(pool)
    .await?;
    Ok(row.map(|(fingerprint, status, body, position)| Kept {
        fingerprint,
        answer: Answer {
            status: u16::try_from(status).unwrap_or(500),
            body,
            position,
        },
    }))
}

/// Keeps `answer` under `key` in the command's transaction; false if another request holds
/// the key (and it has not expired): the caller rolls back and answers with that one.
pub(crate) async fn keep(
    tx: &mut Transaction<'_, Postgres>,
    key: &str,
    fingerprint: &str,
    answer: &Answer,
) -> Result<bool, sqlx::Error> {
    let kept: Option<String> = sqlx::query_scalar(
        "INSERT INTO idempotency_keys (key, fingerprint, status, body, position, expires_at)
         VALUES ($1, $2, $3, $4, $5, now() + make_interval(secs => $6))
         ON CONFLICT (key) DO UPDATE
             SET fingerprint = excluded.fingerprint, status = excluded.status,
                 body = excluded.body, position = excluded.position,
                 created_at = now(), expires_at = excluded.expires_at
             WHERE idempotency_keys.expires_at <= now()
         RETURNING key",
    )
    .bind(key)
    .bind(fingerprint)
    .bind(i16::try_from(answer.status).unwrap_or(500))
    .bind(&answer.body)
    .bind(answer.position)
    .bind(KEEP_FOR.as_secs_f64())
    .fetch_optional(&mut **tx)
    .await?;
    Ok(kept.is_some())
}

/// Deletes expired keys, at most `limit` at a time; returns how many.
pub async fn expire(pool: &PgPool, limit: i64) -> Result<u64, sqlx::Error> {
    let done = sqlx::query(
        "DELETE FROM idempotency_keys WHERE key IN (
             SELECT key FROM idempotency_keys WHERE expires_at <= now() LIMIT $1)",
    )
    .bind(limit)
    .execute(pool)
    .await?;
    Ok(done.rows_affected())
}
