//! Leases: Postgres advisory locks that make a role run once however many replicas start,
//! and the loop that runs such a role's passes for as long as this replica holds its lease.

use std::time::Duration;

use sqlx::PgPool;
use tokio_util::sync::CancellationToken;

use crate::feed::Wakeup;

/// Holds a Postgres advisory lock for as long as it lives, so that a role that must run once
/// (the relay, the projector, the watchdog) runs once however many replicas start.
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

/// When the holder of a lease runs its next pass.
#[derive(Debug, Clone, Copy)]
enum Pace {
    /// A follower of the events table: again at once while it finds work, after a commit
    /// notification (or a poll) when it found none, and a second after an error.
    Feed,
    /// A fixed period after every pass, whatever it found.
    Every(Duration),
}

/// Runs `pass` for as long as `cancel` allows, as the one holder of the lease `name`:
/// again at once while it finds work (the count it returns), after a commit notification
/// (or a poll) when it found none, and a second after an error.
pub async fn follow<F, Fut, E>(pool: &PgPool, name: &str, cancel: &CancellationToken, pass: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<usize, E>>,
    E: std::fmt::Display,
{
    hold(pool, name, cancel, Pace::Feed, pass).await
}

/// Runs `pass` every `period` for as long as `cancel` allows, as the one holder of the
/// lease `name`.
pub async fn every<F, Fut, E>(
    pool: &PgPool,
    name: &str,
    cancel: &CancellationToken,
    period: Duration,
    pass: F,
) where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<usize, E>>,
    E: std::fmt::Display,
{
    hold(pool, name, cancel, Pace::Every(period), pass).await
}

async fn hold<F, Fut, E>(
    pool: &PgPool,
    name: &str,
    cancel: &CancellationToken,
    pace: Pace,
    mut pass: F,
) where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<usize, E>>,
    E: std::fmt::Display,
{
    while !cancel.is_cancelled() {
        let Some(lease) = acquire(pool, name, cancel).await else {
            return;
        };
        if let Some(lease) = run_while_held(pool, name, cancel, pace, lease, &mut pass).await {
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
    pace: Pace,
    mut lease: Lease,
    pass: &mut F,
) -> Option<Lease>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<usize, E>>,
    E: std::fmt::Display,
{
    // Connects only when first waited on, so a role on a fixed period never listens.
    let mut wakeup = Wakeup::new(pool.clone(), Duration::from_millis(500));
    while !cancel.is_cancelled() {
        if !lease.is_held().await {
            tracing::warn!(name, "lost the lease's session; taking it again");
            return None;
        }
        let found = pass().await;
        if let Err(e) = &found {
            tracing::error!(name, error = %e, "pass failed; retrying");
        }
        // `None`: wait for a commit.
        let pause = match (pace, found) {
            (Pace::Every(period), _) => Some(period),
            (Pace::Feed, Ok(0)) => None,
            (Pace::Feed, Ok(_)) => continue,
            (Pace::Feed, Err(_)) => Some(Duration::from_secs(1)),
        };
        tokio::select! {
            _ = cancel.cancelled() => break,
            _ = wakeup.wait(), if pause.is_none() => {}
            _ = tokio::time::sleep(pause.unwrap_or_default()), if pause.is_some() => {}
        }
    }
    Some(lease)
}
