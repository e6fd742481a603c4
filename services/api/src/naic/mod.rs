//! The NAIC face: the API that NAIC's frontend (NAICNO/vm-provision-frontend) calls under
//! `/api`, with NAIC's shapes, over the same use cases as `/api/v1`. Its requests pass the
//! same authentication (session cookie with the Origin check, or a bearer token), access
//! rules, audit actor and correlation id; only the shapes differ, errors included
//! (`{message}`, which the frontend shows).

mod auth;
mod catalog;
pub mod frontend;
mod shapes;
pub mod status;
mod vms;
mod writes;

use axum::body::{to_bytes, Body};
use axum::extract::Request;
use axum::http::header::CONTENT_LENGTH;
use axum::middleware::{from_fn, from_fn_with_state, Next};
use axum::response::Response;
use axum::routing::{delete, get, post, put};
use axum::Router;
use serde_json::{json, Value};

pub use shapes::{parse_template_id, template_id};

use crate::AppState;

/// Every NAIC route: `/api/auth/*` open (sign-in, status, sign-out), the rest behind the
/// platform's authentication, the admin ones behind its admin check.
pub fn router(state: AppState) -> Router<AppState> {
    let admin = Router::new()
        .route("/api/vm/providers", get(catalog::list_providers))
        .route("/api/vm/providers/{id}", get(catalog::get_provider))
        .route(
            "/api/vm/providers/{id}/templates",
            get(catalog::list_provider_templates),
        )
        .route("/api/vm/templates/{id}", get(catalog::get_template))
        .route("/api/user/all", get(catalog::list_users))
        .route_layer(from_fn(crate::auth::require_admin));
    let signed_in = Router::new()
        .route("/api/vm", get(vms::list_vms))
        .route("/api/vm/", get(vms::list_vms))
        .route("/api/vm/templates", get(catalog::list_templates))
        .route("/api/vm/ssh/keys", get(catalog::list_keys))
        .route("/api/vm/ssh/create", post(writes::create_key))
        .route("/api/vm/create", post(writes::create_vm))
        .route("/api/vm/destroy/{id}", delete(writes::destroy_vm))
        .route("/api/vm/archive/{id}", put(writes::archive_vm))
        .route("/api/vm/{id}", get(vms::get_vm))
        .merge(admin)
        // A read waits (bounded) for the caller's own last write, as on `/api/v1`.
        .route_layer(from_fn_with_state(
            state.clone(),
            crate::answers::wait_for_min_position,
        ))
        .layer(from_fn_with_state(state, crate::auth::authenticate));
    Router::new()
        .route("/api/auth/login", get(auth::login))
        .route("/api/auth/status", get(auth::get_status))
        .route("/api/auth/logout", post(auth::logout))
        .merge(signed_in)
        .layer(from_fn(naic_errors))
}

/// The platform's error body (`{code, detail}`) as NAIC's (`{message}`), which the
/// frontend's toasts show; the status stays. Bodies already in NAIC's shape pass as they
/// are.
async fn naic_errors(request: Request, next: Next) -> Response {
    let response = next.run(request).await;
    let status = response.status();
    if !(status.is_client_error() || status.is_server_error()) {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let Ok(bytes) = to_bytes(body, 64 * 1024).await else {
        parts.headers.remove(CONTENT_LENGTH);
        return Response::from_parts(parts, Body::empty());
    };
    let message = serde_json::from_slice::<Value>(&bytes)
        .ok()
        .and_then(|v| v.get("detail").and_then(Value::as_str).map(str::to_owned));
    let Some(message) = message else {
        return Response::from_parts(parts, Body::from(bytes));
    };
    parts.headers.remove(CONTENT_LENGTH);
    let body = serde_json::to_vec(&json!({"message": message})).unwrap_or_default();
    Response::from_parts(parts, Body::from(body))
}
