//! Wakes the followers of the events table (relay, projector, stream hubs) after a writer
//! committed: `pg_notify('events')` in a transaction of its own, sent after the writer's
//! commit and not waiting for its own flush to disk.
//!
//! Not from a trigger in the writer's transaction, as before: Postgres serializes the
//! commits of notifying transactions (one lock, held through the commit's flush to disk, so
//! that notifications queue in commit order), so every writer of events waited for every
//! other's flush in turn, and commits of events were bound to one per flush, whatever the
//! number of connections. The notification carries nothing and a follower reads the table
//! itself, so one sent after the commit is as good; one lost (a crash right after the
//! commit) only delays the followers until their poll.

use std::time::Duration;

use sqlx::PgPool;

/// How long a writer gives the wake-up before it answers anyway (Postgres stalled).
const PATIENCE: Duration = Duration::from_millis(500);

/// Sends the wake-up; a failure is logged, never returned: the events are committed, and
/// the followers' poll finds them.
pub async fn followers(pool: &PgPool) {
    let send = sqlx::query(
        "SELECT set_config('synchronous_commit', 'off', true), pg_notify('events', '')",
    )
    .execute(pool);
    match tokio::time::timeout(PATIENCE, send).await {
        Ok(Ok(_)) => {}
        Ok(Err(error)) => {
            tracing::debug!(%error, "could not wake the followers of the events table")
        }
        Err(_) => tracing::debug!("no answer to the wake-up of the events table's followers"),
    }
}
