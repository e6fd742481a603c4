//! `/api/v1/admin/users/{id}/tokens`: any user's personal API tokens, for admins to see and
//! revoke (a token leaked, a script retired) without disabling the user.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{delete, get};
use axum::{Json, Router};
use domain::identity::UserId;
use uuid::Uuid;

use crate::routes::tokens::TokenOut;
use crate::routes::AppCaller;
use crate::{ApiError, AppState};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/admin/users/{id}/tokens", get(list_user_tokens))
        .route(
            "/admin/users/{id}/tokens/{token_id}",
            delete(revoke_user_token),
        )
}

/// The user `id`; 404 for an id that is no UUID.
fn parse_user(id: &str) -> Result<UserId, ApiError> {
    id.parse()
        .map_err(|_| ApiError::NotFound(format!("no user {id}")))
}

/// A user's tokens (not revoked; expired ones included), oldest first, without secrets.
#[utoipa::path(get, path = "/api/v1/admin/users/{id}/tokens", tag = "admin",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "user id")),
    responses(
        (status = 200, body = [TokenOut]),
        (status = 401, body = crate::error::ErrorBody),
        (status = 403, description = "Not an admin", body = crate::error::ErrorBody),
        (status = 404, description = "No such user", body = crate::error::ErrorBody),
    ))]
#[tracing::instrument(skip_all, fields(user = %id))]
pub async fn list_user_tokens(
    State(state): State<AppState>,
    AppCaller(caller): AppCaller,
    Path(id): Path<String>,
) -> Result<Json<Vec<TokenOut>>, ApiError> {
    let rows = state.app.user_tokens(&caller, parse_user(&id)?).await?;
    Ok(Json(rows.into_iter().map(TokenOut::from).collect()))
}

/// Revokes a user's token: it is refused from now on, and the streams it holds end.
#[utoipa::path(delete, path = "/api/v1/admin/users/{id}/tokens/{token_id}", tag = "admin",
    security(("bearer" = [])),
    params(
        ("id" = String, Path, description = "user id"),
        ("token_id" = String, Path, description = "token id"),
    ),
    responses(
        (status = 204, description = "Revoked"),
        (status = 401, body = crate::error::ErrorBody),
        (status = 403, description = "Not an admin", body = crate::error::ErrorBody),
        (status = 404, description = "No such user, or the user has no such token", body = crate::error::ErrorBody),
    ))]
#[tracing::instrument(skip_all, fields(user = %id, token = %token_id))]
pub async fn revoke_user_token(
    State(state): State<AppState>,
    AppCaller(caller): AppCaller,
    Path((id, token_id)): Path<(String, String)>,
) -> Result<StatusCode, ApiError> {
    let user = parse_user(&id)?;
    let unknown = || ApiError::NotFound(format!("user {id} has no token {token_id}"));
    let token = Uuid::parse_str(&token_id).map_err(|_| unknown())?;
    state.app.revoke_user_token(&caller, user, token).await?;
    Ok(StatusCode::NO_CONTENT)
}
