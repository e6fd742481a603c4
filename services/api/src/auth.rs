use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use secrecy::ExposeSecret;
use subtle::ConstantTimeEq;

use crate::{ApiError, AppState};

/// Lets a request through only with `Authorization: Bearer <admin token>`, compared in
/// constant time.
pub async fn require_admin(
    State(state): State<AppState>,
    request: Request,
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
    Ok(next.run(request).await)
}
