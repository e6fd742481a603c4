//! `oidc_logins` and `sessions`: sign-ins under way and signed-in browsers. Both are found by
//! the SHA-256 of a random value only the browser holds (the `state`, the session cookie).

use std::time::Duration;

use sqlx::{PgPool, Postgres, Transaction};
use time::OffsetDateTime;
use uuid::Uuid;

/// How long a login may take between the redirect to the provider and its callback.
pub const LOGIN_TTL: Duration = Duration::from_secs(600);

/// A login under way, as its callback needs it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct PendingLogin {
    pub pkce_verifier: String,
    pub nonce: String,
    pub return_to: String,
}

/// How many logins may be under way at once. `/auth/login` needs no credential, so each
/// request adds a row: past this many, the oldest are dropped, and a loop of requests
/// cannot grow the table without bound (it can only end other logins under way early,
/// which then start again).
pub const MAX_PENDING_LOGINS: i64 = 10_000;

/// Records a login under way, bound to the browser whose login cookie hashes to
/// `browser_hash`; logins older than [`LOGIN_TTL`], and the oldest past
/// [`MAX_PENDING_LOGINS`], are removed on the way.
pub async fn insert_login(
    pool: &PgPool,
    state_hash: &[u8],
    browser_hash: &[u8],
    login: &PendingLogin,
) -> Result<(), sqlx::Error> {
    insert_login_within(pool, state_hash, browser_hash, login, MAX_PENDING_LOGINS).await
}

/// [`insert_login`] with at most `cap` logins kept.
#[tracing::instrument(skip_all, err)]
pub async fn insert_login_within(
    pool: &PgPool,
    state_hash: &[u8],
    browser_hash: &[u8],
    login: &PendingLogin,
    cap: i64,
) -> Result<(), sqlx::Error> {
    sqlx::query("DELETE FROM oidc_logins WHERE created_at < now() - make_interval(secs => $1)")
        .bind(LOGIN_TTL.as_secs_f64())
        .execute(pool)
        .await?;
    sqlx::query(
        "INSERT INTO oidc_logins (state_hash, browser_hash, pkce_verifier, nonce, return_to)
         VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(state_hash)
    .bind(browser_hash)
    .bind(&login.pkce_verifier)
    .bind(&login.nonce)
    .bind(&login.return_to)
    .execute(pool)
    .await?;
    sqlx::query(
        "DELETE FROM oidc_logins WHERE state_hash IN (
             SELECT state_hash FROM oidc_logins ORDER BY created_at DESC OFFSET $1)",
    )
    .bind(cap)
    .execute(pool)
    .await?;
    Ok(())
}

/// Takes the login with this state away, if it is there, not too old, and was started by
/// the browser whose login cookie hashes to `browser_hash`: a state works once, and only
/// in its own browser. A login asked for by another browser stays, for its own.
#[tracing::instrument(skip_all, err)]
pub async fn take_login(
    pool: &PgPool,
    state_hash: &[u8],
    browser_hash: &[u8],
) -> Result<Option<PendingLogin>, sqlx::Error> {
    sqlx::query_as(
        "DELETE FROM oidc_logins WHERE state_hash = $1 AND browser_hash = $2
         RETURNING pkce_verifier, nonce, return_to, created_at",
    )
    .bind(state_hash)
    .bind(browser_hash)
    .fetch_optional(pool)
    .await
    .map(|row: Option<(String, String, String, OffsetDateTime)>| {
        row.filter(|(.., created)| *created > OffsetDateTime::now_utc() - LOGIN_TTL)
            .map(|(pkce_verifier, nonce, return_to, _)| PendingLogin {
                pkce_verifier,
                nonce,
                return_to,
            })
    })
}

/// The provider's tokens a session holds.
#[derive(Clone, sqlx::FromRow)]
pub struct SessionTokens {
    pub access_token: String,
    pub refresh_token: Option<String>,
    pub id_token: Option<String>,
    pub access_expires_at: Option<OffsetDateTime>,
}

impl std::fmt::Debug for SessionTokens {
    /// The tokens are secrets: only whether there are some.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionTokens")
            .field("refresh_token", &self.refresh_token.is_some())
            .field("access_expires_at", &self.access_expires_at)
            .finish_non_exhaustive()
    }
}

/// A live session.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct SessionRow {
    pub user_id: Uuid,
    #[sqlx(flatten)]
    pub tokens: SessionTokens,
    pub expires_at: OffsetDateTime,
}

const COLUMNS: &str =
    "user_id, access_token, refresh_token, id_token, access_expires_at, expires_at";

/// Starts a session for `user`, ending at `expires_at`.
#[tracing::instrument(skip_all, fields(user = %user), err)]
pub async fn insert_session(
    pool: &PgPool,
    id_hash: &[u8],
    user: Uuid,
    tokens: &SessionTokens,
    expires_at: OffsetDateTime,
) -> Result<(), sqlx::Error> {
    sqlx::query("DELETE FROM sessions WHERE expires_at < now()")
        .execute(pool)
        .await?;
    sqlx::query(
        "INSERT INTO sessions (id_hash, user_id, access_token, refresh_token, id_token,
                               access_expires_at, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(id_hash)
    .bind(user)
    .bind(&tokens.access_token)
    .bind(&tokens.refresh_token)
    .bind(&tokens.id_token)
    .bind(tokens.access_expires_at)
    .bind(expires_at)
    .execute(pool)
    .await?;
    Ok(())
}

/// The live (not expired) session with this id.
pub async fn find_session(
    pool: &PgPool,
    id_hash: &[u8],
) -> Result<Option<SessionRow>, sqlx::Error> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM sessions WHERE id_hash = $1 AND expires_at > now()"
    ))
    .bind(id_hash)
    .fetch_optional(pool)
    .await
}

/// The live session with this id, locked for the transaction: one request at a time
/// refreshes its tokens, since a refresh token may be used once.
pub async fn lock_session(
    tx: &mut Transaction<'_, Postgres>,
    id_hash: &[u8],
) -> Result<Option<SessionRow>, sqlx::Error> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM sessions WHERE id_hash = $1 AND expires_at > now() FOR UPDATE"
    ))
    .bind(id_hash)
    .fetch_optional(&mut **tx)
    .await
}

/// Replaces the session's tokens after a refresh.
pub async fn update_tokens(
    tx: &mut Transaction<'_, Postgres>,
    id_hash: &[u8],
    tokens: &SessionTokens,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE sessions SET access_token = $2, refresh_token = $3,
                id_token = COALESCE($4, id_token), access_expires_at = $5
         WHERE id_hash = $1",
    )
    .bind(id_hash)
    .bind(&tokens.access_token)
    .bind(&tokens.refresh_token)
    .bind(&tokens.id_token)
    .bind(tokens.access_expires_at)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Ends the session with this id; its tokens, if it was there (for the end-session hint).
#[tracing::instrument(skip_all, err)]
pub async fn delete_session<'e, E: sqlx::PgExecutor<'e>>(
    executor: E,
    id_hash: &[u8],
) -> Result<Option<SessionTokens>, sqlx::Error> {
    sqlx::query_as(
        "DELETE FROM sessions WHERE id_hash = $1
         RETURNING access_token, refresh_token, id_token, access_expires_at",
    )
    .bind(id_hash)
    .fetch_optional(executor)
    .await
}

/// The user signed in from `issuer` as `subject`, if there is one.
pub async fn user_by_subject(
    pool: &PgPool,
    issuer: &str,
    subject: &str,
) -> Result<Option<Uuid>, sqlx::Error> {
    sqlx::query_scalar("SELECT id FROM users WHERE issuer = $1 AND subject = $2")
        .bind(issuer)
        .bind(subject)
        .fetch_optional(pool)
        .await
}
