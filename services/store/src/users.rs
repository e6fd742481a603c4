//! `users`: the people who use the platform, with their role, status and groups. Sign-in
//! makes or updates a row (`sign_in`); `grant-admin` may make one before its first sign-in.

use domain::identity::{Role, UserId};
use sqlx::PgPool;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::StoreError;

mod sign_in;

pub use sign_in::{upsert_signed_in, SignIn, SignInError};

/// The built-in admin's issuer and subject: not a URL, so no OpenID provider has it.
pub const BUILTIN_ISSUER: &str = "urn:provisioning:builtin";
pub const BUILTIN_SUBJECT: &str = "admin";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    pub id: UserId,
    pub email: String,
    pub name: Option<String>,
    pub role: Role,
    pub status: UserStatus,
    pub groups: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UserStatus {
    Active,
    Disabled,
}

impl UserStatus {
    pub fn as_str(&self) -> &'static str {
        match self {
            UserStatus::Active => "active",
            UserStatus::Disabled => "disabled",
        }
    }
}

impl std::str::FromStr for UserStatus {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "active" => Ok(UserStatus::Active),
            "disabled" => Ok(UserStatus::Disabled),
            other => Err(format!("unknown user status {other:?}: active or disabled")),
        }
    }
}

/// A user with when they were made and last signed in, for the admin list.
#[derive(Debug, Clone)]
pub struct UserRecord {
    pub user: User,
    pub created_at: OffsetDateTime,
    pub last_sign_in_at: Option<OffsetDateTime>,
}

#[derive(sqlx::FromRow)]
struct Row {
    id: Uuid,
    email: String,
    name: Option<String>,
    role: String,
    status: String,
    groups: Vec<String>,
    created_at: OffsetDateTime,
    last_sign_in_at: Option<OffsetDateTime>,
}

const COLUMNS: &str = "id, email, name, role, status, groups, created_at, last_sign_in_at";

impl TryFrom<Row> for UserRecord {
    type Error = StoreError;

    fn try_from(row: Row) -> Result<Self, StoreError> {
        let decode = |e: String| StoreError::Database(sqlx::Error::Decode(e.into()));
        Ok(UserRecord {
            user: User {
                id: UserId::new(row.id),
                email: row.email,
                name: row.name,
                role: row
                    .role
                    .parse()
                    .map_err(|e: domain::identity::UnknownRole| decode(e.to_string()))?,
                status: row.status.parse().map_err(decode)?,
                groups: row.groups,
            },
            created_at: row.created_at,
            last_sign_in_at: row.last_sign_in_at,
        })
    }
}

fn user(row: Row) -> Result<User, StoreError> {
    UserRecord::try_from(row).map(|r| r.user)
}

/// The user `id`, if there is one.
#[tracing::instrument(skip_all, fields(user = %id), err)]
pub async fn get(pool: &PgPool, id: UserId) -> Result<Option<User>, StoreError> {
    let row: Option<Row> = sqlx::query_as(&format!("SELECT {COLUMNS} FROM users WHERE id = $1"))
        .bind(id.as_uuid())
        .fetch_optional(pool)
        .await?;
    row.map(user).transpose()
}

/// The user who holds `email` (any case) for sure, if there is one: a row waiting for its
/// first sign-in, or a user whose provider verified that email.
#[tracing::instrument(skip_all, err)]
pub async fn by_email(pool: &PgPool, email: &str) -> Result<Option<User>, StoreError> {
    let row: Option<Row> = sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM users WHERE email = $1 AND (subject IS NULL OR email_verified)"
    ))
    .bind(email.trim().to_lowercase())
    .fetch_optional(pool)
    .await?;
    row.map(user).transpose()
}

/// Makes the user who holds `email` for sure (see [`by_email`]) an admin (a super admin
/// stays one), creating a row waiting for that email otherwise: the first sign-in with that
/// email verified by the provider takes it. A user who only says that email, unverified,
/// is not made an admin.
#[tracing::instrument(skip_all, err)]
pub async fn grant_admin(pool: &PgPool, email: &str) -> Result<User, StoreError> {
    let row: Row = sqlx::query_as(&format!(
        "INSERT INTO users (id, email, role) VALUES ($1, $2, 'admin')
         ON CONFLICT (email) WHERE subject IS NULL OR email_verified DO UPDATE SET
             role = CASE WHEN users.role = 'super_admin' THEN 'super_admin' ELSE 'admin' END,
             updated_at = now()
         RETURNING {COLUMNS}"
    ))
    .bind(Uuid::new_v4())
    .bind(email.trim().to_lowercase())
    .fetch_one(pool)
    .await?;
    user(row)
}

/// Sets a user's status; `None` when there is no such user.
#[tracing::instrument(skip_all, fields(user = %id), err)]
pub async fn set_status(
    pool: &PgPool,
    id: UserId,
    status: UserStatus,
) -> Result<Option<User>, StoreError> {
    let row: Option<Row> = sqlx::query_as(&format!(
        "UPDATE users SET status = $2, updated_at = now() WHERE id = $1 RETURNING {COLUMNS}"
    ))
    .bind(id.as_uuid())
    .bind(status.as_str())
    .fetch_optional(pool)
    .await?;
    row.map(user).transpose()
}

/// Sets a user's role; `None` when there is no such user.
#[tracing::instrument(skip_all, fields(user = %id), err)]
pub async fn set_role(pool: &PgPool, id: UserId, role: Role) -> Result<Option<User>, StoreError> {
    let row: Option<Row> = sqlx::query_as(&format!(
        "UPDATE users SET role = $2, updated_at = now() WHERE id = $1 RETURNING {COLUMNS}"
    ))
    .bind(id.as_uuid())
    .bind(role.as_str())
    .fetch_optional(pool)
    .await?;
    row.map(user).transpose()
}

/// Every user, oldest first, with when they were made and last signed in.
#[tracing::instrument(skip_all, err)]
pub async fn list(pool: &PgPool) -> Result<Vec<UserRecord>, StoreError> {
    let rows: Vec<Row> = sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM users ORDER BY created_at, id"
    ))
    .fetch_all(pool)
    .await?;
    rows.into_iter().map(UserRecord::try_from).collect()
}

/// Makes sure the built-in admin's row exists, is a super admin and keeps the identity no
/// OpenID provider can sign in with (the migrations made it; an operator may have changed
/// it since).
#[tracing::instrument(skip_all, err)]
pub async fn ensure_builtin_admin(pool: &PgPool) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT INTO users (id, issuer, subject, email, name, role)
         VALUES ($1, $2, $3, 'admin@localhost', 'built-in admin', 'super_admin')
         ON CONFLICT (id) DO UPDATE SET
             role = 'super_admin', issuer = EXCLUDED.issuer, subject = EXCLUDED.subject",
    )
    .bind(UserId::BUILTIN_ADMIN.as_uuid())
    .bind(BUILTIN_ISSUER)
    .bind(BUILTIN_SUBJECT)
    .execute(pool)
    .await?;
    Ok(())
}
