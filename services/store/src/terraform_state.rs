//! The tables of Terraform's `pg` state backend, prepared before any runner starts.
//!
//! Each `terraform init` creates the backend's schema, sequence, table and index when they
//! are missing, with `IF NOT EXISTS` statements that are not safe against each other: on a
//! new state database, the first runs started together fail with a duplicate key in
//! Postgres' catalogs or `relation "states" already exists`. Made here once, before the
//! dispatcher starts a runner, the objects exist and every init finds them.

use sqlx::PgPool;

use crate::StoreError;

/// The schema the backend uses when `schema_name` is not set, as in the platform's
/// `backend.tf`.
pub const SCHEMA: &str = "terraform_remote_state";

/// What Terraform 1.0.3's `pg` backend runs on a new database (`backend.go`, `configure`),
/// in its order, for the schema [`SCHEMA`]: the same names, types and constraints, so that
/// Terraform finds its own objects. `name` is both `UNIQUE` and indexed by `states_by_name`,
/// as Terraform makes it.
const STATEMENTS: &[&str] = &[
    "CREATE SCHEMA IF NOT EXISTS terraform_remote_state",
    "CREATE SEQUENCE IF NOT EXISTS public.global_states_id_seq AS bigint",
    "CREATE TABLE IF NOT EXISTS terraform_remote_state.states (
        id bigint NOT NULL DEFAULT nextval('public.global_states_id_seq') PRIMARY KEY,
        name text UNIQUE,
        data text
    )",
    "CREATE UNIQUE INDEX IF NOT EXISTS states_by_name ON terraform_remote_state.states (name)",
];

/// Creates the backend's objects that are missing, in one transaction under an advisory
/// lock, so that daemons starting together take turns and the second finds all made. It
/// connects with the backend's own URL: the objects belong to the role the runners use,
/// as if Terraform had made them.
#[tracing::instrument(skip_all, err)]
pub async fn prepare(pool: &PgPool) -> Result<(), StoreError> {
    let mut tx = pool.begin().await?;
    sqlx::query("SELECT pg_advisory_xact_lock(hashtext('provisioning_terraform_state'))")
        .execute(&mut *tx)
        .await?;
    for statement in STATEMENTS {
        sqlx::query(statement).execute(&mut *tx).await?;
    }
    tx.commit().await?;
    Ok(())
}
