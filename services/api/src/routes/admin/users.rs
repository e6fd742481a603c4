//! `/api/v1/admin/users`: every user, and changing one's role or status. Disabling a user
//! refuses their every credential from the next request on. Only a super admin grants or
//! takes away super admin; no one changes their own role or status here.

use axum::extract::{Path, State};
use axum::routing::{get, patch};
use axum::{Json, Router};
use domain::identity::{Role, UserId};
use serde::{Deserialize, Serialize};
use store::users::{User, UserStatus};
use time::OffsetDateTime;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::routes::AppCaller;
use crate::{ApiError, AppJson, AppState};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/admin/users", get(list_users))
        .route("/admin/users/{id}", patch(update_user))
}

/// A user.
#[derive(Debug, Serialize, ToSchema)]
pub struct UserOut {
    pub id: Uuid,
    pub email: String,
    pub name: Option<String>,
    /// `user`, `admin` or `super_admin`.
    pub role: String,
    /// `active` or `disabled`.
    pub status: String,
    pub groups: Vec<String>,
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub created_at: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub last_sign_in_at: Option<OffsetDateTime>,
}

/// What to change; a field left out stays.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UserChangesIn {
    /// `user`, `admin` or `super_admin` (super admins only).
    #[schema(value_type = Option<RoleName>)]
    pub role: Option<String>,
    /// `active` or `disabled`.
    #[schema(value_type = Option<UserStatusName>)]
    pub status: Option<String>,
}

/// A role, as `UserChangesIn` takes it (read by `Role`'s `FromStr`).
#[derive(ToSchema)]
#[schema(rename_all = "snake_case")]
#[allow(dead_code)] // documents the values
pub enum RoleName {
    User,
    Admin,
    SuperAdmin,
}

/// A user's status, as `UserChangesIn` takes it.
#[derive(ToSchema)]
#[schema(rename_all = "snake_case")]
#[allow(dead_code)] // documents the values
pub enum UserStatusName {
    Active,
    Disabled,
}

fn user_out(
    user: User,
    created_at: Option<OffsetDateTime>,
    last: Option<OffsetDateTime>,
) -> UserOut {
    UserOut {
        id: user.id.as_uuid(),
        email: user.email,
        name: user.name,
        role: user.role.as_str().to_owned(),
        status: user.status.as_str().to_owned(),
        groups: user.groups,
        created_at,
        last_sign_in_at: last,
    }
}

/// Every user, oldest first.
#[utoipa::path(get, path = "/api/v1/admin/users", tag = "admin",
    security(("bearer" = [])),
    responses((status = 200, body = [UserOut]), (status = 401, body = crate::error::ErrorBody),
        (status = 403, description = "Not an admin", body = crate::error::ErrorBody)))]
pub async fn list_users(
    State(state): State<AppState>,
    AppCaller(caller): AppCaller,
) -> Result<Json<Vec<UserOut>>, ApiError> {
    let users = state.app.users(&caller).await?;
    Ok(Json(
        users
            .into_iter()
            .map(|r| user_out(r.user, Some(r.created_at), r.last_sign_in_at))
            .collect(),
    ))
}

/// Changes a user's role or status.
#[utoipa::path(patch, path = "/api/v1/admin/users/{id}", tag = "admin",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "user id")),
    request_body = UserChangesIn,
    responses(
        (status = 200, body = UserOut),
        (status = 403, description = "Not an admin, or super admin needed (granting it, or changing a super admin)", body = crate::error::ErrorBody),
        (status = 404, body = crate::error::ErrorBody),
        (status = 422, description = "An unknown role or status, or a change to oneself", body = crate::error::ErrorBody),
    ))]
#[tracing::instrument(skip_all, fields(user = %id))]
pub async fn update_user(
    State(state): State<AppState>,
    AppCaller(caller): AppCaller,
    Path(id): Path<String>,
    AppJson(input): AppJson<UserChangesIn>,
) -> Result<Json<UserOut>, ApiError> {
    let invalid = |field: &str, reason: String| ApiError::Invalid {
        field: field.into(),
        reason,
    };
    let id: UserId = id
        .parse()
        .map_err(|_| ApiError::NotFound(format!("no user {id:?}")))?;
    let role: Option<Role> = input
        .role
        .as_deref()
        .map(str::parse)
        .transpose()
        .map_err(|e: domain::identity::UnknownRole| invalid("role", e.to_string()))?;
    let status: Option<UserStatus> = input
        .status
        .as_deref()
        .map(str::parse)
        .transpose()
        .map_err(|e: String| invalid("status", e))?;
    let changes = app::users::UserChanges { role, status };
    let user = state.app.change_user(&caller, id, changes).await?;
    Ok(Json(user_out(user, None, None)))
}
