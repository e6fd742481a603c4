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

/// Connects to the database of `url`, creating the database first if it does not exist.
#[tracing::instrument(skip_all, err)]
pub async fn connect(url: &str, max_connections: u32) -> Result<PgPool, StoreError> {
    if !Postgres::database_exists(url).await? {
        tracing::info!("creating the database");
        if let Err(e) = Postgres::create_database(url).await {
            // Another replica may have created it meanwhile.
            if !Postgres::database_exists(url).await? {
                return Err(e.into());
            }
        }
    }
    let options = PgConnectOptions::from_str(url)?.application_name("provisioningd");
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
    sqlx::migrate!("../../migrations").run(pool).await?;
    Ok(())
}
