//! Browser sessions (a cookie set at sign-in).

use axum::http::request::Parts;
use domain::identity::UserId;

use crate::{ApiError, AppState};

/// The user of the request's session cookie; `None` without one.
pub async fn user_of(_state: &AppState, _parts: &Parts) -> Result<Option<UserId>, ApiError> {
    Ok(None)
}
