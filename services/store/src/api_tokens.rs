//! `api_tokens`: personal API tokens. Only the SHA-256 of a token's secret is stored; the
//! secret itself is shown once, when the token is made.

use domain::identity::UserId;
use sqlx::PgPool;
use time::OffsetDateTime;
use uuid::Uuid;

/// A token as its owner lists it (never its secret nor hash).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ApiTokenRow {
    pub id: Uuid,
    pub user_id: Uuid,
    pub name: String,
    pub prefix: String,
    pub created_at: OffsetDateTime,
    pub expires_at: Option<OffsetDateTime>,
    pub last_used_at: Option<OffsetDateTime>,
}

const COLUMNS: &str = "id, user_id, name, prefix, created_at, expires_at, last_used_at";

/// What a token's hash leads to, when the token is live (neither revoked nor expired).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct LiveToken {
    pub id: Uuid,
    pub user_id: Uuid,
    pub last_used_at: Option<OffsetDateTime>,
    pub expires_at: Option<OffsetDateTime>,
    /// Set for tokens made through the admin token: the hash of that admin token.
    pub admin_token_hash: Option<Vec<u8>>,
}

/// What made a new token: the token it was made with, if any, and the admin token's hash
/// when it comes from the admin token.
#[derive(Debug, Clone, Default)]
pub struct Minted<'a> {
    pub by: Option<Uuid>,
    pub admin_token_hash: Option<&'a [u8]>,
}

/// Records a new token of `user`, made with a session or straight into the store.
pub async fn insert(
    pool: &PgPool,
    user: UserId,
    name: &str,
    prefix: &str,
    hash: &[u8],
    expires_at: Option<OffsetDateTime>,
) -> Result<ApiTokenRow, sqlx::Error> {
    let minted = Minted::default();
    insert_minted(pool, user, name, prefix, hash, expires_at, &minted).await
}

/// Records a new token of `user`, made as `minted` says.
#[tracing::instrument(skip_all, fields(user = %user), err)]
pub async fn insert_minted(
    pool: &PgPool,
    user: UserId,
    name: &str,
    prefix: &str,
    hash: &[u8],
    expires_at: Option<OffsetDateTime>,
    minted: &Minted<'_>,
) -> Result<ApiTokenRow, sqlx::Error> {
    sqlx::query_as(&format!(
        "INSERT INTO api_tokens (id, user_id, name, prefix, hash, expires_at, minted_by,
                                 admin_token_hash)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING {COLUMNS}"
    ))
    .bind(Uuid::new_v4())
    .bind(user.as_uuid())
    .bind(name)
    .bind(prefix)
    .bind(hash)
    .bind(expires_at)
    .bind(minted.by)
    .bind(minted.admin_token_hash)
    .fetch_one(pool)
    .await
}

/// The user's tokens not revoked (expired ones included, so their owner sees them lapse),
/// oldest first.
#[tracing::instrument(skip_all, fields(user = %user), err)]
pub async fn list(pool: &PgPool, user: UserId) -> Result<Vec<ApiTokenRow>, sqlx::Error> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM api_tokens WHERE user_id = $1 AND revoked_at IS NULL
         ORDER BY created_at, id"
    ))
    .bind(user.as_uuid())
    .fetch_all(pool)
    .await
}

/// Revokes the user's token `id`; false when the user has no such token (or it is revoked).
#[tracing::instrument(skip_all, fields(user = %user, token = %id), err)]
pub async fn revoke(pool: &PgPool, user: UserId, id: Uuid) -> Result<bool, sqlx::Error> {
    let done = sqlx::query(
        "UPDATE api_tokens SET revoked_at = now()
         WHERE id = $1 AND user_id = $2 AND revoked_at IS NULL",
    )
    .bind(id)
    .bind(user.as_uuid())
    .execute(pool)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// The live token with this hash, if any.
#[tracing::instrument(skip_all, err)]
pub async fn live_by_hash(pool: &PgPool, hash: &[u8]) -> Result<Option<LiveToken>, sqlx::Error> {
    sqlx::query_as(
        "SELECT id, user_id, last_used_at, expires_at, admin_token_hash FROM api_tokens
         WHERE hash = $1 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())",
    )
    .bind(hash)
    .fetch_optional(pool)
    .await
}

/// Records that token `id` was used now, unless that was recorded within the last minute:
/// a busy token costs one write a minute, not one a request.
#[tracing::instrument(skip_all, fields(token = %id), err)]
pub async fn touch(pool: &PgPool, id: Uuid) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE api_tokens SET last_used_at = now()
         WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')",
    )
    .bind(id)
    .execute(pool)
    .await?;
    Ok(())
}
