//! Who is signed in to the console, and its sign-in form.
//!
//! A page is read with the API's session cookie (sign-in through the OpenID provider) or
//! with a token given once to the sign-in form: a personal API token or the admin token,
//! kept in a cookie of the console's own (`HttpOnly`, `SameSite=Strict`, `Path=/console`,
//! `Secure` but for plain http on loopback). Sessions hold the provider's tokens, so a
//! session cannot be made from an API token; the token's cookie is checked like a bearer
//! token on every page (revoked or expired: signed out at once).
//!
//! Forms follow the API's rule for cookie requests that change something: `Origin` (or at
//! least `Referer`) must be this site's.

use askama::Template;
use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use domain::identity::UserId;
use serde::Deserialize;

use super::{page, Layout};
use crate::auth::{admin_token, tokens, Credential, Principal};
use crate::oidc::session::cookie;
use crate::{ApiError, AppState};

/// The console's token cookie; it holds the token base64url-encoded (an admin token may
/// hold any character).
const TOKEN_COOKIE: &str = "provisioning_console_token";

/// How long the browser keeps the token's cookie: a working day. The token's own expiry
/// and revocation still apply on every page.
const TOKEN_COOKIE_MAX_AGE: u64 = 12 * 3600;

/// The signed-in principal of a page's request; `None` when no credential lets it in (none,
/// revoked, expired, a disabled user, a session that ended). As for the API's reads, the
/// page waits (bounded) until the read models show the caller's last write: the page a
/// form leads to shows what it did.
pub(crate) async fn signed_in(
    state: &AppState,
    parts: &Parts,
) -> Result<Option<Principal>, ApiError> {
    let Some((principal, _)) = signed_in_with(state, parts).await? else {
        return Ok(None);
    };
    crate::answers::own_writes(state, principal.user).await?;
    Ok(Some(principal))
}

/// The signed-in principal and the credential that let them in.
pub(crate) async fn signed_in_with(
    state: &AppState,
    parts: &Parts,
) -> Result<Option<(Principal, Credential)>, ApiError> {
    let found = match cookie(&parts.headers, TOKEN_COOKIE) {
        Some(value) => match URL_SAFE_NO_PAD.decode(value).ok() {
            Some(token) => user_of_token(state, &String::from_utf8_lossy(&token)).await?,
            None => None,
        },
        None => {
            let user = unless_unauthorized(crate::auth::session::user_of(state, parts).await)?;
            let id_hash = crate::oidc::session::session_id(&parts.headers)
                .map(|id| crate::oidc::hash(&id))
                .unwrap_or_default();
            user.map(|user| (user, Credential::Session(id_hash)))
        }
    };
    let Some((user, credential)) = found else {
        return Ok(None);
    };
    let principal = unless_unauthorized(crate::auth::principal_of(state, user).await.map(Some))?;
    Ok(principal.map(|p| (p, credential)))
}

/// The user of a personal API token or of the admin token, with the credential it is;
/// `None` for anything else.
async fn user_of_token(
    state: &AppState,
    token: &str,
) -> Result<Option<(UserId, Credential)>, ApiError> {
    if token.starts_with(tokens::PREFIX) {
        let live = unless_unauthorized(tokens::user_of(state, token).await.map(Some))?;
        return Ok(live.map(|live| {
            let credential = Credential::Token {
                id: live.id,
                hash: tokens::hash(token),
                expires_at: live.expires_at,
                admin_token_hash: live.admin_token_hash,
            };
            (UserId::new(live.user_id), credential)
        }));
    }
    Ok(admin_token::matches(state, token)
        .then_some((UserId::BUILTIN_ADMIN, Credential::AdminToken)))
}

fn unless_unauthorized<T>(result: Result<Option<T>, ApiError>) -> Result<Option<T>, ApiError> {
    match result {
        Err(ApiError::Unauthorized) => Ok(None),
        other => other,
    }
}

#[derive(Template)]
#[template(path = "console/sign_in.html")]
struct SignInPage {
    layout: Layout,
    /// Where to go once signed in: a console path.
    next: String,
    error: Option<&'static str>,
    /// Whether the OpenID provider's sign-in is offered.
    oidc: bool,
}

/// The sign-in page, answered in place of a page that needs a signed-in caller; it comes
/// back to that page.
pub(crate) fn sign_in_required(state: &AppState, parts: &Parts) -> Response {
    // The path as asked: the router nested under `/console` sees it without that prefix.
    let asked = parts
        .extensions
        .get::<axum::extract::OriginalUri>()
        .map_or_else(|| parts.uri.path(), |uri| uri.path());
    sign_in_form(state, StatusCode::UNAUTHORIZED, asked, None)
}

fn sign_in_form(
    state: &AppState,
    status: StatusCode,
    next: &str,
    error: Option<&'static str>,
) -> Response {
    page(
        status,
        &SignInPage {
            layout: Layout::signed_out(),
            next: console_path(next).to_owned(),
            error,
            oidc: state.oidc.is_some(),
        },
    )
}

/// `next` when it is a path of the console; the VM list otherwise (never another site).
fn console_path(next: &str) -> &str {
    let inside = next == "/console" || next.starts_with("/console/");
    match inside && !next.contains("//") && !next.contains('\\') {
        true => next,
        false => "/console",
    }
}

#[derive(Deserialize)]
pub(crate) struct NextQuery {
    next: Option<String>,
}

/// `GET /console/sign-in`.
pub(crate) async fn sign_in_page(
    State(state): State<AppState>,
    Query(query): Query<NextQuery>,
) -> Response {
    let next = query.next.unwrap_or_default();
    sign_in_form(&state, StatusCode::OK, &next, None)
}

#[derive(Deserialize)]
struct SignInForm {
    token: String,
    #[serde(default)]
    next: String,
}

/// `POST /console/sign-in`: a valid token sets the console's cookie and goes on to `next`;
/// anything else shows the form again, without what was typed.
pub(crate) async fn sign_in(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    if !from_this_site(&state, &headers) {
        let error = "The form must be sent from this site's own page.";
        return Ok(sign_in_form(&state, StatusCode::FORBIDDEN, "", Some(error)));
    }
    let Ok(form) = serde_urlencoded::from_bytes::<SignInForm>(&body) else {
        let error = "The form was incomplete: give a token.";
        return Ok(sign_in_form(
            &state,
            StatusCode::BAD_REQUEST,
            "",
            Some(error),
        ));
    };
    let token = form.token.trim();
    let user = match token.is_empty() {
        true => None,
        false => user_of_token(&state, token).await?,
    };
    let active = match user.map(|(user, _)| user) {
        Some(user) => unless_unauthorized(crate::auth::principal_of(&state, user).await.map(Some))?,
        None => None,
    };
    if active.is_none() {
        let error =
            "That token is not valid: it is unknown, revoked or expired, or its user is disabled.";
        return Ok(sign_in_form(
            &state,
            StatusCode::UNAUTHORIZED,
            &form.next,
            Some(error),
        ));
    }
    let value = URL_SAFE_NO_PAD.encode(token.as_bytes());
    let set = format!(
        "{TOKEN_COOKIE}={value}; Path=/console; HttpOnly; SameSite=Strict; Max-Age={TOKEN_COOKIE_MAX_AGE}{}",
        secure(&state)
    );
    Ok(see_other(console_path(&form.next), vec![set]))
}

/// `POST /console/sign-out`: forgets the token's cookie, and ends the browser session if
/// there is one.
pub(crate) async fn sign_out(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    if !from_this_site(&state, &headers) {
        let error = "The form must be sent from this site's own page.";
        return Ok(sign_in_form(&state, StatusCode::FORBIDDEN, "", Some(error)));
    }
    let mut cookies = vec![format!(
        "{TOKEN_COOKIE}=; Path=/console; HttpOnly; SameSite=Strict; Max-Age=0{}",
        secure(&state)
    )];
    if let Some(oidc) = state.oidc.as_deref() {
        if crate::oidc::session::session_id(&headers).is_some() {
            crate::routes::auth::end_session(&state, oidc, &headers).await?;
            cookies.push(crate::oidc::session::clear_cookie(oidc));
        }
    }
    Ok(see_other("/console/sign-in", cookies))
}

fn see_other(to: &str, cookies: Vec<String>) -> Response {
    let mut response = (StatusCode::SEE_OTHER, [(header::LOCATION, to.to_owned())]).into_response();
    for value in cookies {
        if let Ok(value) = HeaderValue::from_str(&value) {
            response.headers_mut().append(header::SET_COOKIE, value);
        }
    }
    response
}

/// `; Secure` unless the console is served over plain http on loopback.
fn secure(state: &AppState) -> &'static str {
    match url::Url::parse(&state.public_url) {
        Ok(url) if crate::oidc::plain_loopback(&url) => "",
        _ => "; Secure",
    }
}

/// Whether a form's request names this site as its origin (`Origin`, or else `Referer`).
pub(super) fn from_this_site(state: &AppState, headers: &HeaderMap) -> bool {
    let Ok(public) = url::Url::parse(&state.public_url) else {
        return false;
    };
    let ours = public.origin().ascii_serialization();
    let header = |name| {
        headers
            .get(name)
            .and_then(|v: &HeaderValue| v.to_str().ok())
    };
    let origin = match header(header::ORIGIN) {
        Some(origin) => Some(origin.to_owned()),
        None => header(header::REFERER)
            .and_then(|r| url::Url::parse(r).ok())
            .map(|u| u.origin().ascii_serialization()),
    };
    origin.is_some_and(|origin| origin == ours)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_stays_inside_the_console() {
        assert_eq!(console_path("/console/vms/1"), "/console/vms/1");
        assert_eq!(console_path("/console"), "/console");
        for elsewhere in [
            "",
            "https://elsewhere.test/console",
            "//elsewhere.test/console",
            "/console//elsewhere.test",
            "/consolex",
            "/api/v1/vms",
            "/console/\\elsewhere",
        ] {
            assert_eq!(console_path(elsewhere), "/console", "{elsewhere}");
        }
    }
}
