//! NAIC's `/api/auth`: sign-in through the platform's own OpenID Connect client (PKCE,
//! `state`, `nonce` and the login cookie, as `/api/v1/auth/login`), then the frontend's
//! `/kcauth/callback`; the session's status in NAIC's shape; sign-out.

use axum::extract::{Query, State};
use axum::http::header::SET_COOKIE;
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;
use store::users::UserStatus;

use super::shapes::NaicUser;
use crate::routes::auth::{configured, end_session, LoginQuery};
use crate::{ApiError, AppState};

/// Where the browser lands after the callback: the frontend's page that reads the status.
pub const AFTER_SIGN_IN: &str = "/kcauth/callback";

/// Starts a sign-in that ends on the frontend's `/kcauth/callback` (the provider returns
/// to the platform's registered callback, `/api/v1/auth/callback`, first).
pub async fn login(State(state): State<AppState>, parts: Parts) -> Result<Response, ApiError> {
    let query = LoginQuery {
        return_to: Some(AFTER_SIGN_IN.to_owned()),
    };
    crate::routes::auth::login(State(state), Query(query), parts).await
}

/// Always 200 with `{isAuthenticated, user}`, as NAIC answers, except for a disabled user:
/// NAIC's 403 that sends the frontend to its profile-status page.
pub async fn get_status(State(state): State<AppState>, parts: Parts) -> Result<Response, ApiError> {
    let signed_out = || Json(json!({"isAuthenticated": false, "user": null})).into_response();
    let id = match crate::auth::session::user_of(&state, &parts).await {
        Ok(Some(id)) => id,
        Ok(None) | Err(ApiError::Unauthorized) => return Ok(signed_out()),
        Err(e) => return Err(e),
    };
    let Some(user) = store::users::get(&state.app.pool, id)
        .await
        .map_err(crate::error::store_failed)?
    else {
        return Ok(signed_out());
    };
    if user.status == UserStatus::Disabled {
        let body = json!({
            "message": "this account is disabled",
            "route": "profile-status",
            "routeParam": {"status": "disabled"},
        });
        return Ok((StatusCode::FORBIDDEN, Json(body)).into_response());
    }
    let user = NaicUser::of(&user, None);
    Ok(Json(json!({"isAuthenticated": true, "user": user})).into_response())
}

/// Ends the session; `{logoutUrl}` is the provider's end-session URL back to the public
/// URL, or the public URL itself when the provider has none.
pub async fn logout(State(state): State<AppState>, parts: Parts) -> Result<Response, ApiError> {
    let oidc = configured(&state)?;
    let url = end_session(&state, oidc, &parts.headers).await?;
    let logout_url = url.unwrap_or_else(|| format!("{}/", oidc.public_url));
    Ok((
        [(SET_COOKIE, crate::oidc::session::clear_cookie(oidc))],
        Json(json!({"logoutUrl": logout_url})),
    )
        .into_response())
}
