//! Which row a sign-in (a browser's, or a bearer JWT's first use) is recorded on.
//!
//! The row of the account's (issuer, subject) if there is one. Else, only when the provider
//! says the email is verified, the row waiting for that email (made by `grant-admin` or the
//! bootstrap list before its owner's first sign-in). Else a new row with the role `user`.
//! An email is never proof of anything unless verified: anyone may type one into an
//! account at a provider that does not check it. The built-in admin has an identity of its
//! own (migration 0021) and is never found by email.

use domain::identity::Role;
use sqlx::PgPool;
use uuid::Uuid;

use super::{user, Row, User, COLUMNS};
use crate::StoreError;

/// The unique index over the emails that are certain (waiting rows and verified ones).
const EMAIL_INDEX: &str = "users_email_claimed";

/// What a sign-in tells of its user (from the ID token's or the JWT's claims).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignIn {
    pub issuer: String,
    pub subject: String,
    pub email: String,
    /// The provider's `email_verified` claim; absent counts as `false`.
    pub email_verified: bool,
    pub name: Option<String>,
    pub groups: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum SignInError {
    /// Another user already holds this (verified) email: another account of the provider,
    /// or a user who signed in with it before. Nothing was recorded.
    #[error("another user of this platform already has this email")]
    EmailTaken,
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<sqlx::Error> for SignInError {
    fn from(e: sqlx::Error) -> Self {
        match &e {
            sqlx::Error::Database(db) if db.constraint() == Some(EMAIL_INDEX) => {
                SignInError::EmailTaken
            }
            _ => SignInError::Store(e.into()),
        }
    }
}

/// Records a sign-in on its row (see the module's comment). Email, name and groups follow
/// the sign-in; a verified email in `bootstrap_admins` raises the user to admin. A role is
/// never lowered here.
#[tracing::instrument(skip_all, err)]
pub async fn upsert_signed_in(
    pool: &PgPool,
    sign_in: &SignIn,
    bootstrap_admins: &[String],
) -> Result<User, SignInError> {
    let email = sign_in.email.trim().to_lowercase();
    let verified = sign_in.email_verified;
    let bootstrap = verified
        && bootstrap_admins
            .iter()
            .any(|a| a.trim().eq_ignore_ascii_case(&email));
    let mut tx = pool.begin().await?;
    // The first requests of a new subject may come at once (a bearer JWT used by parallel
    // requests): one at a time, so that the later ones find the row the first made.
    sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
        .bind(format!("users/{}\n{}", sign_in.issuer, sign_in.subject))
        .execute(&mut *tx)
        .await?;
    let known: Option<Uuid> =
        sqlx::query_scalar("SELECT id FROM users WHERE issuer = $1 AND subject = $2")
            .bind(&sign_in.issuer)
            .bind(&sign_in.subject)
            .fetch_optional(&mut *tx)
            .await?;
    let mut raise_to = bootstrap.then_some(Role::Admin);
    let mut disable = false;
    let id = match known {
        Some(id) if verified => {
            // A row made for this email since (say `grant-admin` after the user's first
            // sign-in with another or unverified email) is theirs: merged into their row.
            let waiting: Option<(String, String)> = sqlx::query_as(
                "DELETE FROM users WHERE email = $1 AND subject IS NULL RETURNING role, status",
            )
            .bind(&email)
            .fetch_optional(&mut *tx)
            .await?;
            if let Some((role, status)) = waiting {
                raise_to = raise_to.max(role.parse().ok());
                disable = status == "disabled";
            }
            Some(id)
        }
        Some(id) => Some(id),
        None if verified => {
            sqlx::query_scalar(
                "SELECT id FROM users WHERE email = $1 AND subject IS NULL FOR UPDATE",
            )
            .bind(&email)
            .fetch_optional(&mut *tx)
            .await?
        }
        None => None,
    };
    let row: Row = match id {
        Some(id) => {
            sqlx::query_as(&format!(
                "UPDATE users SET
                     issuer = $2, subject = $3, email = $4, email_verified = $5, name = $6,
                     groups = $7,
                     role = CASE WHEN array_position(ARRAY['user', 'admin', 'super_admin'], $8)
                                    > array_position(ARRAY['user', 'admin', 'super_admin'], role)
                                 THEN $8 ELSE role END,
                     status = CASE WHEN $9 THEN 'disabled' ELSE status END,
                     last_sign_in_at = now(), updated_at = now()
                 WHERE id = $1
                 RETURNING {COLUMNS}"
            ))
            .bind(id)
            .bind(&sign_in.issuer)
            .bind(&sign_in.subject)
            .bind(&email)
            .bind(verified)
            .bind(&sign_in.name)
            .bind(&sign_in.groups)
            .bind(raise_to.map(|r| r.as_str()))
            .bind(disable)
            .fetch_one(&mut *tx)
            .await?
        }
        None => {
            sqlx::query_as(&format!(
                "INSERT INTO users (id, issuer, subject, email, email_verified, name, groups,
                                    role, last_sign_in_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, now())
                 RETURNING {COLUMNS}"
            ))
            .bind(Uuid::new_v4())
            .bind(&sign_in.issuer)
            .bind(&sign_in.subject)
            .bind(&email)
            .bind(verified)
            .bind(&sign_in.name)
            .bind(&sign_in.groups)
            .bind(raise_to.unwrap_or(Role::User).as_str())
            .fetch_one(&mut *tx)
            .await?
        }
    };
    tx.commit().await?;
    Ok(user(row)?)
}
