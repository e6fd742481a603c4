pub mod admin;
pub mod auth;
pub mod callbacks;
pub mod cli;
pub mod clusters;
pub mod events;
pub mod health;
pub mod me;
pub mod providers;
pub mod schemas;
pub mod ssh_keys;
pub mod taskservs;
pub mod tokens;
pub mod vms;

use axum::extract::FromRequestParts;

use crate::auth::Principal;

/// The caller of a use case, as this face finds it: the authenticated principal, the
/// request's id (recorded as the correlation id) and the client's address.
pub(crate) struct AppCaller(pub app::Caller);

impl FromRequestParts<crate::AppState> for AppCaller {
    type Rejection = crate::ApiError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &crate::AppState,
    ) -> Result<Self, Self::Rejection> {
        let Principal(principal) = Principal::from_request_parts(parts, state).await?;
        let request_id = crate::RequestId::from_request_parts(parts, state).await?;
        let Ok(crate::network::ClientAddr(client_addr)) =
            crate::network::ClientAddr::from_request_parts(parts, state).await;
        Ok(AppCaller(app::Caller {
            principal,
            request_id: request_id.0,
            client_addr,
        }))
    }
}
