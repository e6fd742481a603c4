//! `ssh_keys`: the public SSH keys users registered, each with its owner. Every query names
//! the owner, so one owner never sees nor uses another's keys.

use domain::provisioning::SshPublicKey;
use sqlx::PgPool;
use time::OffsetDateTime;
use uuid::Uuid;

/// A registered key.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct SshKeyRow {
    pub id: Uuid,
    pub owner: String,
    pub name: String,
    pub public_key: String,
    pub algorithm: String,
    pub fingerprint: String,
    pub created_at: OffsetDateTime,
}

const COLUMNS: &str = "id, owner, name, public_key, algorithm, fingerprint, created_at";

/// Registers `key` for `owner`; `None` when the owner has registered this key already
/// (same fingerprint, whatever its comment).
#[tracing::instrument(skip_all, fields(owner = %owner), err)]
pub async fn insert(
    pool: &PgPool,
    owner: &str,
    name: &str,
    key: &SshPublicKey,
) -> Result<Option<SshKeyRow>, sqlx::Error> {
    sqlx::query_as(&format!(
        "INSERT INTO ssh_keys ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, now())
         ON CONFLICT (owner, fingerprint) DO NOTHING RETURNING {COLUMNS}"
    ))
    .bind(Uuid::new_v4())
    .bind(owner)
    .bind(name)
    .bind(key.as_str())
    .bind(key.algorithm())
    .bind(key.fingerprint())
    .fetch_optional(pool)
    .await
}

/// The owner's key with `fingerprint`, if registered.
pub async fn by_fingerprint(
    pool: &PgPool,
    owner: &str,
    fingerprint: &str,
) -> Result<Option<SshKeyRow>, sqlx::Error> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM ssh_keys WHERE owner = $1 AND fingerprint = $2"
    ))
    .bind(owner)
    .bind(fingerprint)
    .fetch_optional(pool)
    .await
}

/// The owner's keys, oldest first.
pub async fn list(pool: &PgPool, owner: &str) -> Result<Vec<SshKeyRow>, sqlx::Error> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM ssh_keys WHERE owner = $1 ORDER BY created_at, id"
    ))
    .bind(owner)
    .fetch_all(pool)
    .await
}

/// The owner's key `id`; `None` for no such key or another owner's.
pub async fn get(pool: &PgPool, owner: &str, id: Uuid) -> Result<Option<SshKeyRow>, sqlx::Error> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM ssh_keys WHERE owner = $1 AND id = $2"
    ))
    .bind(owner)
    .bind(id)
    .fetch_optional(pool)
    .await
}

/// Removes the owner's key `id`; whether there was one. VMs created with it keep their copy.
#[tracing::instrument(skip_all, fields(owner = %owner, key_id = %id), err)]
pub async fn delete(pool: &PgPool, owner: &str, id: Uuid) -> Result<bool, sqlx::Error> {
    let deleted = sqlx::query("DELETE FROM ssh_keys WHERE owner = $1 AND id = $2")
        .bind(owner)
        .bind(id)
        .execute(pool)
        .await?;
    Ok(deleted.rows_affected() > 0)
}
