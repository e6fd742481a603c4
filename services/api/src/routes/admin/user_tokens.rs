//! `/api/v1/admin/users/{id}/tokens`: any user's personal API tokens, for admins to see and
//! revoke (a token leaked, a script retired) without disabling the user.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{delete, get};
use axum::{Json, Router};
use domain::identity::UserId;
use uuid::Uuid;

use crate::auth::Principal;
use crate::routes::tokens::TokenOut;
use crate::{ApiError, AppState};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/admin/users/{id}/tokens", get(list_user_tokens))
        .route(
            "/admin/users/{id}/tokens/{token_id}",
            delete(revoke_user_token),
        )
}

/// The user `id` when there is one; 404 otherwise (an id that is no UUID included).
async fn known_user(state: &AppState, id: &str) -> Result<UserId, ApiError> {
    let unknown = || ApiError::NotFound(format!("no user {id}"));
    let user: UserId = id.parse().map_err(|_| unknown())?;
    store::users::get(&state.app.pool, user)
        .await
        .map_err(crate::error::store_failed)?
        .ok_or_else(unknown)?;
    Ok(user)
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
    Path(id): Path<String>,
) -> Result<Json<Vec<TokenOut>>, ApiError> {
    let user = known_user(&state, &id).await?;
    let rows = store::api_tokens::list(&state.app.pool, user).await?;
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
#[tracing::instrument(skip_all, fields(admin = %principal.user, user = %id, token = %token_id))]
pub async fn revoke_user_token(
    State(state): State<AppState>,
    principal: Principal,
    Path((id, token_id)): Path<(String, String)>,
) -> Result<StatusCode, ApiError> {
    let user = known_user(&state, &id).await?;
    let unknown = || ApiError::NotFound(format!("user {id} has no token {token_id}"));
    let token = Uuid::parse_str(&token_id).map_err(|_| unknown())?;
    if store::api_tokens::revoke(&state.app.pool, user, token).await? {
        tracing::info!("personal API token revoked by an admin");
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(unknown())
    }
}
