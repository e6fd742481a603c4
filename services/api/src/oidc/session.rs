//! Browser sessions: the cookie, the CSRF check, and the provider's tokens refreshed as they
//! expire.

use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, Method};
use domain::identity::UserId;
use openidconnect::core::CoreTokenResponse;
use openidconnect::{OAuth2TokenResponse, RefreshToken, RequestTokenError, TokenResponse};
use store::sessions::SessionTokens;
use time::OffsetDateTime;

use super::{hash, Oidc, SESSION_COOKIE, SESSION_TTL};
use crate::{ApiError, AppState};

/// The user of the request's session cookie: `None` without the cookie (or without
/// sign-in), an error for a session that ended or a state-changing request from elsewhere.
pub async fn user_of(state: &AppState, parts: &Parts) -> Result<Option<UserId>, ApiError> {
    let Some(oidc) = state.oidc.as_deref() else {
        return Ok(None);
    };
    let Some(id) = cookie(&parts.headers, SESSION_COOKIE) else {
        return Ok(None);
    };
    if changes_state(&parts.method) {
        check_origin(oidc, &parts.headers)?;
    }
    user_of_session(state, oidc, &hash(&id)).await.map(Some)
}

/// The user of the session whose id hashes to `id_hash`, its tokens refreshed if they
/// expired; `Unauthorized` once the session ended. Also what an open Socket.IO connection
/// checks again, as a request would.
pub(crate) async fn user_of_session(
    state: &AppState,
    oidc: &Oidc,
    id_hash: &[u8],
) -> Result<UserId, ApiError> {
    let Some(session) = store::sessions::find_session(&state.pool, id_hash).await? else {
        return Err(ApiError::Unauthorized);
    };
    if expired(&session.tokens) {
        refresh(state, oidc, id_hash).await?;
    }
    Ok(UserId::new(session.user_id))
}

/// The session id the request's cookie holds, if any.
pub(crate) fn session_id(headers: &HeaderMap) -> Option<String> {
    cookie(headers, SESSION_COOKIE)
}

pub(crate) fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(axum::http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(n, _)| *n == name)
        .map(|(_, v)| v.to_owned())
        .filter(|v| !v.is_empty())
}

fn changes_state(method: &Method) -> bool {
    !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

/// CSRF defence for requests that change something: a browser names the page's origin in
/// `Origin` (or at least `Referer`), and it must be this API's public one.
pub(crate) fn check_origin(oidc: &Oidc, headers: &HeaderMap) -> Result<(), ApiError> {
    let header = |name| {
        headers
            .get(name)
            .and_then(|v: &HeaderValue| v.to_str().ok())
    };
    let origin = match header(axum::http::header::ORIGIN) {
        Some(origin) => Some(origin.to_owned()),
        None => header(axum::http::header::REFERER)
            .and_then(|r| url::Url::parse(r).ok())
            .map(|u| u.origin().ascii_serialization()),
    };
    match origin {
        Some(origin) if origin == oidc.origin => Ok(()),
        Some(_) => Err(ApiError::Forbidden(
            "a request with the session cookie must come from this site (Origin)".into(),
        )),
        None => Err(ApiError::Forbidden(
            "a request with the session cookie must name its Origin".into(),
        )),
    }
}

/// The `Set-Cookie` value of a new session.
pub(crate) fn set_cookie(oidc: &Oidc, id: &str) -> String {
    let secure = if oidc.secure_cookie { "; Secure" } else { "" };
    format!(
        "{SESSION_COOKIE}={id}; Path=/; HttpOnly; SameSite=Lax; Max-Age={}{secure}",
        SESSION_TTL.as_secs()
    )
}

/// The `Set-Cookie` value that removes the session cookie.
pub(crate) fn clear_cookie(oidc: &Oidc) -> String {
    let secure = if oidc.secure_cookie { "; Secure" } else { "" };
    format!("{SESSION_COOKIE}=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0{secure}")
}

fn expired(tokens: &SessionTokens) -> bool {
    tokens
        .access_expires_at
        .is_some_and(|at| at <= OffsetDateTime::now_utc())
}

/// The tokens of a token response; `previous` refresh token kept when none came.
pub(crate) fn tokens_of(response: &CoreTokenResponse, previous: Option<String>) -> SessionTokens {
    SessionTokens {
        access_token: response.access_token().secret().to_owned(),
        refresh_token: response
            .refresh_token()
            .map(|t| t.secret().to_owned())
            .or(previous),
        id_token: response.id_token().map(|t| t.to_string()),
        access_expires_at: response.expires_in().map(|d| OffsetDateTime::now_utc() + d),
    }
}

/// Refreshes the session's tokens, one request at a time (the row is locked): the provider
/// refusing ends the session; a provider that cannot be reached is a 503 and ends nothing.
async fn refresh(state: &AppState, oidc: &Oidc, id_hash: &[u8]) -> Result<(), ApiError> {
    let mut tx = state.pool.begin().await?;
    let Some(session) = store::sessions::lock_session(&mut tx, id_hash).await? else {
        return Err(ApiError::Unauthorized);
    };
    if !expired(&session.tokens) {
        // Another request refreshed them meanwhile.
        return Ok(());
    }
    let Some(refresh_token) = session.tokens.refresh_token.clone() else {
        tracing::info!(user = %session.user_id, "session ended: its access token expired");
        store::sessions::delete_session(&mut *tx, id_hash).await?;
        tx.commit().await?;
        return Err(ApiError::Unauthorized);
    };
    let refresh_token = RefreshToken::new(refresh_token);
    let request = oidc
        .client
        .exchange_refresh_token(&refresh_token)
        .map_err(ApiError::internal)?;
    match request.request_async(&oidc.http).await {
        Ok(response) => {
            let tokens = tokens_of(&response, Some(refresh_token.into_secret()));
            store::sessions::update_tokens(&mut tx, id_hash, &tokens).await?;
            tx.commit().await?;
            Ok(())
        }
        Err(RequestTokenError::ServerResponse(refused)) => {
            tracing::info!(
                user = %session.user_id,
                error = %refused.error(),
                "session ended: the provider refused to refresh its tokens"
            );
            store::sessions::delete_session(&mut *tx, id_hash).await?;
            tx.commit().await?;
            Err(ApiError::Unauthorized)
        }
        Err(e) => {
            tracing::warn!(error = %super::error_chain(&e), "could not refresh a session's tokens");
            Err(ApiError::Unavailable(
                "the OpenID provider cannot be reached to refresh the session; retry".into(),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_session_cookie_is_found_among_others() {
        let mut headers = HeaderMap::new();
        headers.append("cookie", "a=1; provisioning_session=abc".parse().unwrap());
        assert_eq!(session_id(&headers).as_deref(), Some("abc"));
        let mut headers = HeaderMap::new();
        headers.append("cookie", "provisioning_session_x=1".parse().unwrap());
        headers.append("cookie", "provisioning_session=".parse().unwrap());
        assert_eq!(session_id(&headers), None);
    }

    #[test]
    fn only_reads_are_free_of_the_origin_check() {
        for method in [Method::GET, Method::HEAD, Method::OPTIONS] {
            assert!(!changes_state(&method));
        }
        for method in [Method::POST, Method::PUT, Method::PATCH, Method::DELETE] {
            assert!(changes_state(&method));
        }
    }
}
