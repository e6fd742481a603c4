//! JWT bearer tokens issued by the OpenID provider (verified in `crate::oidc::jwt`).

use domain::identity::UserId;

use crate::{ApiError, AppState};

/// The user of a JWT bearer token; `None` when JWTs are not accepted here or the token is
/// no JWT; an error for a JWT that is refused.
pub async fn user_of(state: &AppState, token: &str) -> Result<Option<UserId>, ApiError> {
    crate::oidc::user_of_jwt(state, token).await
}
