use std::str::FromStr;
use std::time::Duration;

use sqlx::migrate::MigrateDatabase;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{PgPool, Postgres};

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database error")]
    Database(#[from] sqlx::Error),
    #[error("an event or snapshot could not be encoded or decoded")]
    Payload(#[from] serde_json::Error),
    #[error("a row holds a value the domain refuses")]
    Row(#[from] domain::provisioning::ValueError),
    #[error("could not apply migrations")]
    Migrate(#[from] sqlx::migrate::MigrateError),
}

/// How long taking a connection from the pool (opening one included) may take.
pub const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(3);

/// Limits every session of the daemon sets, so that one of its own transactions left open
/// (a replica whose host died between `INSERT` and `COMMIT`, a stuck statement) cannot
/// hold the feed's commit horizon, or a lock, for longer than this.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionLimits {
    /// `statement_timeout`: the longest one statement may run.
    pub statement_timeout: Duration,
    /// `idle_in_transaction_session_timeout`: the longest a transaction may wait between
    /// statements before the server ends the session.
    pub idle_in_transaction_timeout: Duration,
}

impl Default for SessionLimits {
    fn default() -> Self {
        Self {
            statement_timeout: Duration::from_secs(30),
            idle_in_transaction_timeout: Duration::from_secs(15),
        }
    }
}

/// Connects to the database of `url`, creating the database first if it does not exist,
/// with the default [`SessionLimits`].
pub async fn connect(url: &str, max_connections: u32) -> Result<PgPool, StoreError> {
    connect_with(url, max_connections, SessionLimits::default()).await
}

/// Connects to the database of `url`, creating the database first if it does not exist;
/// every session sets `limits`.
#[tracing::instrument(skip_all, err)]
pub async fn connect_with(
    url: &str,
    max_connections: u32,
    limits: SessionLimits,
) -> Result<PgPool, StoreError> {
    if !Postgres::database_exists(url).await? {
        tracing::info!("creating the database");
        if let Err(e) = Postgres::create_database(url).await {
            // Another replica may have created it meanwhile.
            if !Postgres::database_exists(url).await? {
                return Err(e.into());
            }
        }
    }
    let millis = |d: Duration| d.as_millis().to_string();
    let options = PgConnectOptions::from_str(url)?
        .application_name("provisioningd")
        .options([
            ("statement_timeout", millis(limits.statement_timeout)),
            (
                "idle_in_transaction_session_timeout",
                millis(limits.idle_in_transaction_timeout),
            ),
        ]);
    let pool = PgPoolOptions::new()
        .max_connections(max_connections)
        // A request waits at most this long for a connection: with the database out of
        // reach, a command is answered 503 within seconds, not left hanging.
        .acquire_timeout(ACQUIRE_TIMEOUT)
        .connect_with(options)
        .await?;
    Ok(pool)
}

/// Applies the SQL migrations of `migrations/` that are not applied yet.
#[tracing::instrument(skip_all, err)]
pub async fn migrate(pool: &PgPool) -> Result<(), StoreError> {
    // A migration may build an index on a large table: no statement timeout for it. The
    // connection is closed afterwards, so the setting never reaches another use.
    let mut conn = pool.acquire().await?;
    sqlx::query("SET statement_timeout = 0")
        .execute(&mut *conn)
        .await?;
    let migrated = sqlx::migrate!("../../migrations").run(&mut *conn).await;
    conn.close().await?;
    migrated?;
    Ok(())
}
