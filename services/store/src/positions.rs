//! Each caller's last committed position (`caller_positions`), for read-your-writes across
//! daemons: every replica reads the same row.

use domain::identity::UserId;
use sqlx::PgPool;

/// Records `position` as `user`'s last write, unless a later one is recorded already.
#[tracing::instrument(skip_all, fields(user = %user, position), err)]
pub async fn record(pool: &PgPool, user: UserId, position: i64) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO caller_positions (user_id, position) VALUES ($1, $2)
         ON CONFLICT (user_id) DO UPDATE
         SET position = GREATEST(caller_positions.position, EXCLUDED.position),
             recorded_at = now()
         WHERE caller_positions.position < EXCLUDED.position",
    )
    .bind(user.as_uuid())
    .bind(position)
    .execute(pool)
    .await?;
    Ok(())
}

/// The position of `user`'s last write, if they made one.
pub async fn last(pool: &PgPool, user: UserId) -> Result<Option<i64>, sqlx::Error> {
    sqlx::query_scalar("SELECT position FROM caller_positions WHERE user_id = $1")
        .bind(user.as_uuid())
        .fetch_optional(pool)
        .await
}
