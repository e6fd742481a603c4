//! The streams the console's script follows: the API's own (`/api/v1/vms/stream` and
//! `/api/v1/vms/{id}/stream`), served again under `/console/streams/` so that the console's
//! cookie (`Path=/console`) reaches them. The caller is found as for a page and handed to
//! the API's handlers as the authentication layer would; what they send is the same.

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use super::session::signed_in_with;
use crate::routes::vms::{stream_vm, stream_vms};
use crate::{ApiError, AppState};

pub(crate) fn router(state: AppState) -> Router<AppState> {
    Router::new()
        .route("/streams/vms", get(stream_vms))
        .route("/streams/vms/{id}", get(stream_vm))
        .route_layer(axum::middleware::from_fn_with_state(state, authenticate))
}

/// Lets a stream's request through with the console's caller, as the API's authentication
/// layer does with a bearer token: `401` without one, `404` for a VM the caller may not see.
async fn authenticate(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let (mut parts, body) = request.into_parts();
    let Some((principal, credential)) = signed_in_with(&state, &parts).await? else {
        return Ok(StatusCode::UNAUTHORIZED.into_response());
    };
    let vm = parts
        .uri
        .path()
        .rsplit_once("/streams/vms/")
        .map(|(_, id)| id.to_owned());
    if let Some(vm) = vm {
        let Ok(vm) = vm.parse() else {
            return Ok(StatusCode::NOT_FOUND.into_response());
        };
        if state.app.visible(&principal, vm).await.is_err() {
            return Ok(StatusCode::NOT_FOUND.into_response());
        }
    }
    parts.extensions.insert(principal);
    parts.extensions.insert(credential);
    Ok(next.run(Request::from_parts(parts, body)).await)
}
