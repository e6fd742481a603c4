use axum::extract::{FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::middleware::Next;
use axum::response::Response;
use domain::Actor;
use secrecy::ExposeSecret;
use subtle::ConstantTimeEq;

use crate::{ApiError, AppState};

/// Lets a request through only with `Authorization: Bearer <admin token>`, compared in
/// constant time.
pub async fn require_admin(
    State(state): State<AppState>,
    mut request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let given = request
        .headers()
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or_default();
    let expected = state.admin_token.expose_secret().as_bytes();
    if given.is_empty() || !bool::from(given.as_bytes().ct_eq(expected)) {
        return Err(ApiError::Unauthorized);
    }
    request
        .extensions_mut()
        .insert(Owner(Actor::Admin.as_str().to_owned()));
    Ok(next.run(request).await)
}

/// Who owns what a request registers and reads (SSH keys), set here, where the caller is
/// identified: the admin token's holder is `admin`, the one identity for now. Sign-in with
/// OpenID Connect will set each user's own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner(String);

impl Owner {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Owner {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        parts.extensions.get::<Owner>().cloned().ok_or_else(|| {
            ApiError::internal("no owner: the route is not behind the authentication layer")
        })
    }
}
