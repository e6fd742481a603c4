//! `users`: the people who use the platform, with their role, status and groups. Sign-in
//! makes or updates a row; `grant-admin` may make one before its first sign-in.

use domain::identity::{Role, UserId};
use sqlx::PgPool;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::StoreError;

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

/// What a sign-in tells of its user (from the ID token's claims).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignIn {
    pub issuer: String,
    pub subject: String,
    pub email: String,
    pub name: Option<String>,
    pub groups: Vec<String>,
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

/// Records a sign-in: the row of (issuer, subject), else the row with that email and no
/// subject yet (one `grant-admin` made), else a new one. Email, name and groups follow the
/// sign-in; an email in `bootstrap_admins` is raised to admin. A role is never lowered here.
#[tracing::instrument(skip_all, err)]
pub async fn upsert_signed_in(
    pool: &PgPool,
    sign_in: &SignIn,
    bootstrap_admins: &[String],
) -> Result<User, StoreError> {
    let email = sign_in.email.trim().to_lowercase();
    let bootstrap = bootstrap_admins
        .iter()
        .any(|a| a.trim().eq_ignore_ascii_case(&email));
    let mut tx = pool.begin().await?;
    let existing: Option<Uuid> = sqlx::query_scalar(
        "SELECT id FROM users WHERE issuer = $1 AND subject = $2
         UNION ALL
         SELECT id FROM users WHERE email = $3 AND subject IS NULL
         LIMIT 1",
    )
    .bind(&sign_in.issuer)
    .bind(&sign_in.subject)
    .bind(&email)
    .fetch_optional(&mut *tx)
    .await?;
    let id = existing.unwrap_or_else(Uuid::new_v4);
    let row: Row = sqlx::query_as(&format!(
        "INSERT INTO users (id, issuer, subject, email, name, groups, role, last_sign_in_at)
         VALUES ($1, $2, $3, $4, $5, $6, CASE WHEN $7 THEN 'admin' ELSE 'user' END, now())
         ON CONFLICT (id) DO UPDATE SET
             issuer = EXCLUDED.issuer, subject = EXCLUDED.subject, email = EXCLUDED.email,
             name = EXCLUDED.name, groups = EXCLUDED.groups,
             role = CASE WHEN $7 AND users.role = 'user' THEN 'admin' ELSE users.role END,
             last_sign_in_at = now(), updated_at = now()
         RETURNING {COLUMNS}"
    ))
    .bind(id)
    .bind(&sign_in.issuer)
    .bind(&sign_in.subject)
    .bind(&email)
    .bind(&sign_in.name)
    .bind(&sign_in.groups)
    .bind(bootstrap)
    .fetch_one(&mut *tx)
    .await?;
    tx.commit().await?;
    user(row)
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

/// The user with `email` (any case), if there is one.
#[tracing::instrument(skip_all, err)]
pub async fn by_email(pool: &PgPool, email: &str) -> Result<Option<User>, StoreError> {
    let row: Option<Row> = sqlx::query_as(&format!("SELECT {COLUMNS} FROM users WHERE email = $1"))
        .bind(email.trim().to_lowercase())
        .fetch_optional(pool)
        .await?;
    row.map(user).transpose()
}

/// Makes the user with `email` an admin (a super admin stays one), creating the row if it
/// does not exist yet: their first sign-in links it.
#[tracing::instrument(skip_all, err)]
pub async fn grant_admin(pool: &PgPool, email: &str) -> Result<User, StoreError> {
    let row: Row = sqlx::query_as(&format!(
        "INSERT INTO users (id, email, role) VALUES ($1, $2, 'admin')
         ON CONFLICT (email) DO UPDATE SET
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

/// Makes sure the built-in admin's row exists and is a super admin (the migration made
/// it; an operator may have changed it since).
#[tracing::instrument(skip_all, err)]
pub async fn ensure_builtin_admin(pool: &PgPool) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT INTO users (id, email, name, role) VALUES ($1, 'admin@localhost', 'built-in admin', 'super_admin')
         ON CONFLICT (id) DO UPDATE SET role = 'super_admin'",
    )
    .bind(UserId::BUILTIN_ADMIN.as_uuid())
    .execute(pool)
    .await?;
    Ok(())
}
