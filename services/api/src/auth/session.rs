//! Browser sessions (a cookie set at sign-in; see `crate::oidc::session`).

use axum::http::request::Parts;
use domain::identity::UserId;

use crate::{ApiError, AppState};

/// The user of the request's session cookie; `None` without one; an error for a session
/// that ended or a state-changing request from another site.
pub async fn user_of(state: &AppState, parts: &Parts) -> Result<Option<UserId>, ApiError> {
    crate::oidc::session::user_of(state, parts).await
}
