//! `/api/v1/auth`: sign-in with OpenID Connect (authorization code flow with PKCE, `state`
//! and `nonce`), the session's status, and sign-out.

use axum::extract::{Query, State};
use axum::http::header::{LOCATION, SET_COOKIE};
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::response::{AppendHeaders, IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use openidconnect::core::{CoreAuthenticationFlow, CoreGenderClaim};
use openidconnect::{
    AccessTokenHash, AuthorizationCode, CsrfToken, Nonce, OAuth2TokenResponse, PkceCodeChallenge,
    PkceCodeVerifier, RequestTokenError, Scope, TokenResponse,
};
use serde::{Deserialize, Serialize};
use store::sessions::PendingLogin;
use time::OffsetDateTime;
use utoipa::{IntoParams, ToSchema};

use crate::oidc::{self, login_cookie, session, Oidc};
use crate::{ApiError, AppState};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/v1/auth/login", get(login))
        .route("/api/v1/auth/callback", get(callback))
        .route("/api/v1/auth/status", get(get_auth_status))
        .route("/api/v1/auth/logout", post(logout))
}

pub(crate) fn configured(state: &AppState) -> Result<&Oidc, ApiError> {
    state
        .oidc
        .as_deref()
        .ok_or_else(|| ApiError::NotFound("sign-in with OpenID Connect is not configured".into()))
}

/// The longest `return_to` accepted, in bytes: a login under way is stored before the
/// browser is signed in, so what it stores stays small.
pub const RETURN_TO_MAX: usize = 2048;

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LoginQuery {
    /// Where to go once signed in: a path of this site, such as `/vms`; `/` if unset. At
    /// most 2048 bytes.
    #[param(max_length = 2048, pattern = r"^[^\u0000]*$")]
    pub return_to: Option<String>,
}

/// Starts a sign-in: redirects the browser to the OpenID provider, with a short-lived
/// cookie that binds the sign-in to this browser (its callback needs it).
#[utoipa::path(get, path = "/api/v1/auth/login", tag = "auth", params(LoginQuery), responses(
    (status = 303, description = "To the provider's authorization endpoint, with the login cookie"),
    (status = 400, description = "`return_to` is not a path of this site, or is longer than 2048 bytes", body = crate::error::ErrorBody),
    (status = 404, description = "Sign-in is not configured", body = crate::error::ErrorBody),
))]
pub async fn login(
    State(state): State<AppState>,
    Query(query): Query<LoginQuery>,
    parts: Parts,
) -> Result<Response, ApiError> {
    let oidc = configured(&state)?;
    let return_to = match query.return_to {
        None => "/".to_owned(),
        Some(path) if path.len() > RETURN_TO_MAX => {
            return Err(ApiError::BadRequest(format!(
                "return_to: at most {RETURN_TO_MAX} bytes"
            )))
        }
        Some(path) => same_site_path(&path).ok_or_else(|| {
            ApiError::BadRequest("return_to: must be a path of this site, such as /vms".into())
        })?,
    };
    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    let mut request = oidc.client.authorize_url(
        CoreAuthenticationFlow::AuthorizationCode,
        CsrfToken::new_random,
        Nonce::new_random,
    );
    for scope in oidc.scopes.iter().filter(|s| *s != "openid") {
        request = request.add_scope(Scope::new(scope.clone()));
    }
    let (url, csrf, nonce) = request.set_pkce_challenge(challenge).url();
    let pending = PendingLogin {
        pkce_verifier: verifier.secret().clone(),
        nonce: nonce.secret().clone(),
        return_to,
    };
    let browser = login_cookie::value(oidc, &parts.headers);
    store::sessions::insert_login(
        &state.app.pool,
        &oidc::hash(csrf.secret()),
        &oidc::hash(&browser),
        &pending,
    )
    .await?;
    Ok((
        StatusCode::SEE_OTHER,
        [
            (LOCATION, url.to_string()),
            (SET_COOKIE, login_cookie::set(oidc, &browser)),
        ],
    )
        .into_response())
}

/// `path` if it is a path of this site: `/...`, but not `//host...` nor `/\host...` (which
/// browsers read as another host), with no control character.
fn same_site_path(path: &str) -> Option<String> {
    let plain = path.starts_with('/')
        && !path.starts_with("//")
        && !path.contains('\\')
        && !path.chars().any(char::is_control);
    let base = url::Url::parse("http://this.site.invalid/").ok()?;
    let stays = base
        .join(path)
        .is_ok_and(|u| u.host_str() == Some("this.site.invalid"));
    (plain && stays).then(|| path.to_owned())
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CallbackQuery {
    #[param(pattern = r"^[^\u0000]*$")]
    pub code: Option<String>,
    #[param(pattern = r"^[^\u0000]*$")]
    pub state: Option<String>,
    #[param(pattern = r"^[^\u0000]*$")]
    pub error: Option<String>,
}

/// Where the provider sends the browser back: checks the `state` (once, and only in the
/// browser that started the sign-in: its login cookie), exchanges the code
/// with the PKCE verifier, checks the ID token and its `nonce`, records the user and starts
/// a session.
#[utoipa::path(get, path = "/api/v1/auth/callback", tag = "auth", params(CallbackQuery), responses(
    (status = 303, description = "Signed in: to `return_to`, with the session cookie"),
    (status = 400, description = "Unknown, expired or used `state`, or one this browser did not ask for (no login cookie); a code or ID token the provider or this check refused", body = crate::error::ErrorBody),
    (status = 403, description = "The provider refused, the account has no email, or it is disabled", body = crate::error::ErrorBody),
    (status = 409, description = "Another user already has this account's verified email", body = crate::error::ErrorBody),
))]
pub async fn callback(
    State(state): State<AppState>,
    Query(query): Query<CallbackQuery>,
    parts: Parts,
) -> Result<Response, ApiError> {
    let oidc = configured(&state)?;
    let csrf = query
        .state
        .ok_or_else(|| ApiError::BadRequest("state: missing".into()))?;
    // Checked before anything is taken: a login stays for the browser that asked for it.
    let browser = login_cookie::held(oidc, &parts.headers).ok_or_else(|| {
        ApiError::BadRequest(
            "state: this browser did not start this sign-in (it has no login cookie): start \
             the sign-in again"
                .into(),
        )
    })?;
    let login =
        store::sessions::take_login(&state.app.pool, &oidc::hash(&csrf), &oidc::hash(&browser))
            .await?
            .ok_or_else(|| {
                ApiError::BadRequest(
                    "unknown, expired or used state, or one another browser asked for: start the \
                 sign-in again"
                        .into(),
                )
            })?;
    if let Some(error) = query.error {
        return Err(ApiError::Forbidden(format!(
            "the OpenID provider did not sign you in: {error}"
        )));
    }
    let code = query
        .code
        .ok_or_else(|| ApiError::BadRequest("code: missing".into()))?;
    let response = oidc
        .client
        .exchange_code(AuthorizationCode::new(code))
        .map_err(ApiError::internal)?
        .set_pkce_verifier(PkceCodeVerifier::new(login.pkce_verifier))
        .request_async(&oidc.http)
        .await
        .map_err(|e| match e {
            RequestTokenError::ServerResponse(refused) => ApiError::BadRequest(format!(
                "the OpenID provider refused the code: {}",
                refused.error()
            )),
            e => unreachable_provider(&e),
        })?;
    let id_token = response
        .id_token()
        .ok_or_else(|| ApiError::BadRequest("the provider answered no ID token".into()))?;
    let verifier = oidc.client.id_token_verifier();
    let bad_id_token =
        |e: &dyn std::fmt::Display| ApiError::BadRequest(format!("the ID token is not valid: {e}"));
    let claims = id_token
        .claims(&verifier, &Nonce::new(login.nonce))
        .map_err(|e| bad_id_token(&e))?;
    if let Some(expected) = claims.access_token_hash() {
        let alg = id_token.signing_alg().map_err(|e| bad_id_token(&e))?;
        let key = id_token
            .signing_key(&verifier)
            .map_err(|e| bad_id_token(&e))?;
        let actual = AccessTokenHash::from_token(response.access_token(), alg, key)
            .map_err(|e| bad_id_token(&e))?;
        if actual != *expected {
            return Err(bad_id_token(&"its at_hash does not match the access token"));
        }
    }
    let userinfo = match oidc.client.user_info(
        response.access_token().clone(),
        Some(claims.subject().clone()),
    ) {
        Ok(request) => {
            let info: oidc::UserInfo = request
                .request_async::<_, _, CoreGenderClaim>(&oidc.http)
                .await
                .map_err(|e| unreachable_provider(&e))?;
            serde_json::to_value(&info)
                .ok()
                .and_then(|v| v.as_object().cloned())
        }
        // The provider has no userinfo endpoint: the ID token says it all.
        Err(_) => None,
    };
    let id_claims = oidc::claims_of(&id_token.to_string()).unwrap_or_default();
    let profile = oidc::merge(
        claims.subject().to_string(),
        &id_claims,
        userinfo.as_ref(),
        &oidc.groups_claim,
    );
    let user = oidc::sign_in(&state, oidc, profile).await?;
    let id = oidc::random_token();
    let tokens = session::tokens_of(&response, None);
    let expires_at = OffsetDateTime::now_utc() + oidc::SESSION_TTL;
    store::sessions::insert_session(
        &state.app.pool,
        &oidc::hash(&id),
        user.as_uuid(),
        &tokens,
        expires_at,
    )
    .await?;
    // Appended: both cookies are `Set-Cookie`, which an array of headers would overwrite.
    Ok((
        StatusCode::SEE_OTHER,
        AppendHeaders([
            (LOCATION, login.return_to),
            (SET_COOKIE, session::set_cookie(oidc, &id)),
            (SET_COOKIE, login_cookie::clear(oidc)),
        ]),
    )
        .into_response())
}

fn unreachable_provider(e: &dyn std::error::Error) -> ApiError {
    tracing::warn!(error = %oidc::error_chain(e), "the OpenID provider failed");
    ApiError::Unavailable("the OpenID provider cannot be reached; try to sign in again".into())
}

/// Whether the caller's browser is signed in, and as whom.
#[derive(Debug, Serialize, ToSchema)]
pub struct AuthStatus {
    pub authenticated: bool,
    pub user: Option<StatusUser>,
}

/// The signed-in user, as the database has it now.
#[derive(Debug, Serialize, ToSchema)]
pub struct StatusUser {
    pub id: uuid::Uuid,
    pub email: String,
    pub name: Option<String>,
    /// `user`, `admin` or `super_admin`.
    pub role: String,
    pub groups: Vec<String>,
}

/// Whether the session cookie signs the caller in, and as whom.
#[utoipa::path(get, path = "/api/v1/auth/status", tag = "auth", responses(
    (status = 200, body = AuthStatus),
))]
pub async fn get_auth_status(
    State(state): State<AppState>,
    parts: Parts,
) -> Result<Json<AuthStatus>, ApiError> {
    let signed_out = Json(AuthStatus {
        authenticated: false,
        user: None,
    });
    let user = match session::user_of(&state, &parts).await {
        Ok(Some(user)) => user,
        Ok(None) | Err(ApiError::Unauthorized) => return Ok(signed_out),
        Err(e) => return Err(e),
    };
    match oidc::active_user(&state, user).await? {
        Some(user) => Ok(Json(AuthStatus {
            authenticated: true,
            user: Some(user),
        })),
        None => Ok(signed_out),
    }
}

/// Where the browser may go next to sign out at the provider too.
#[derive(Debug, Serialize, ToSchema)]
pub struct LogoutOut {
    /// The provider's end-session URL, when it has one: visiting it ends the sign-in there.
    pub end_session_url: Option<String>,
}

/// Ends the session (and removes its cookie).
#[utoipa::path(post, path = "/api/v1/auth/logout", tag = "auth", responses(
    (status = 200, body = LogoutOut),
    (status = 403, description = "The request came from another site (Origin)", body = crate::error::ErrorBody),
))]
pub async fn logout(State(state): State<AppState>, parts: Parts) -> Result<Response, ApiError> {
    let oidc = configured(&state)?;
    let end_session_url = end_session(&state, oidc, &parts.headers).await?;
    Ok((
        [(SET_COOKIE, session::clear_cookie(oidc))],
        Json(LogoutOut { end_session_url }),
    )
        .into_response())
}

/// Deletes the request's session (a request from another site is refused first), and the
/// provider's end-session URL that returns to the public URL, when it has one. Without a
/// session cookie nothing is deleted and there is no URL.
pub(crate) async fn end_session(
    state: &AppState,
    oidc: &Oidc,
    headers: &axum::http::HeaderMap,
) -> Result<Option<String>, ApiError> {
    let Some(id) = session::session_id(headers) else {
        return Ok(None);
    };
    session::check_origin(oidc, headers)?;
    let ended = store::sessions::delete_session(&state.app.pool, &oidc::hash(&id)).await?;
    Ok(oidc.end_session.as_ref().map(|endpoint| {
        let mut url = endpoint.clone();
        {
            let mut query = url.query_pairs_mut();
            query.append_pair("client_id", oidc.client.client_id().as_str());
            query.append_pair("post_logout_redirect_uri", &format!("{}/", oidc.public_url));
            if let Some(hint) = ended.and_then(|t| t.id_token) {
                query.append_pair("id_token_hint", &hint);
            }
        }
        url.to_string()
    }))
}

#[cfg(test)]
mod tests {
    use super::same_site_path;

    #[test]
    fn return_to_is_a_path_of_this_site() {
        for good in ["/", "/vms", "/vms/1?tab=logs#top", "/a//b"] {
            assert_eq!(same_site_path(good).as_deref(), Some(good), "{good}");
        }
        for bad in [
            "//evil.example",
            "/\\evil.example",
            "https://evil.example/",
            "evil.example",
            "/\t/evil.example",
            "\\\\evil.example",
            "",
        ] {
            assert_eq!(same_site_path(bad), None, "{bad:?}");
        }
    }
}
