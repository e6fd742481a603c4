//! The REST API under `/api/v1` and its Server-Sent Events streams, NAIC's face under
//! `/api`, the console's pages under `/console`, and a built frontend at `/`. `app(state)` builds the
//! whole router, so tests can run it in process.

mod answers;
pub mod auth;
mod console;
mod error;
mod extract;
mod input;
mod layers;
pub mod naic;
mod naic_socket;
mod network;
pub use app::policy;
pub mod oidc;
mod openapi;
mod routes;
mod streams;
mod timestamps;

use std::sync::Arc;

use axum::Router;
use secrecy::SecretString;

pub use app::network::DEFAULT_WIDEST_PREFIX;
pub use auth::Principal;
pub use error::ApiError;
use extract::{AppJson, RequestId};
pub use network::NetworkRules;
pub use openapi::ApiDoc;
pub use streams::slots::PER_CALLER as STREAMS_PER_CALLER;
pub use streams::Hub as StreamHub;
pub use streams::Slots as StreamSlots;

#[derive(Clone)]
pub struct AppState {
    /// The use cases, and what they work with (the database, the bus, the catalog's
    /// definitions, the policies): every face calls the same.
    pub app: app::App,
    /// The admin token, when enabled: its holder is the built-in admin.
    pub admin_token: Option<Arc<SecretString>>,
    /// How `me` (in `allow_ssh_from`) finds the caller.
    pub network: NetworkRules,
    /// Sign-in with OpenID Connect and its bearer JWTs, when configured.
    pub oidc: Option<Arc<oidc::Oidc>>,
    /// Emails made admins at their sign-in (`PROVISIONING_BOOTSTRAP_ADMINS`, lowercased).
    pub bootstrap_admins: Arc<[String]>,
    /// The NATS connection of the per-VM streams, whose subscriptions hold few messages
    /// (`bus::Bus::connect_for_streams`).
    pub stream_nats: bus::async_nats::Client,
    /// The follower of the commit order behind the streams of many VMs.
    pub hub: Arc<StreamHub>,
    /// Cancelled when the process stops: the live streams end then, so that the server's
    /// graceful shutdown does not wait for their clients.
    pub stopping: tokio_util::sync::CancellationToken,
    /// The streams and exports each caller holds open (at most `PROVISIONING_STREAMS_PER_CALLER`).
    pub slots: Arc<streams::Slots>,
    /// The built frontend served at `/` (`PROVISIONING_FRONTEND_DIR`), if any.
    pub frontend: Option<Arc<std::path::PathBuf>>,
    /// Where browsers reach this API (`PROVISIONING_PUBLIC_URL`, or where it listens): the
    /// console's forms must come from its origin, and its cookie is `Secure` unless it is
    /// plain http on loopback.
    pub public_url: Arc<str>,
}

pub fn app(state: AppState) -> Router {
    let api = Router::new()
        .merge(routes::vms::router(state.clone()))
        .merge(routes::ssh_keys::router())
        .merge(routes::tokens::router())
        .merge(routes::me::router())
        .merge(routes::taskservs::router(state.clone()))
        .merge(routes::clusters::router(state.clone()))
        .merge(routes::providers::router(state.clone()))
        .merge(routes::admin::router(state.clone()))
        .merge(openapi::router())
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            auth::authenticate,
        ));
    let routes = Router::new()
        // A VM's callbacks carry their own signed token, not a bearer token.
        .route(
            "/api/v1/callbacks/{token}",
            axum::routing::post(routes::callbacks::callback),
        )
        // Sign-in and the session's status work before there is a session.
        .merge(routes::auth::router())
        // The command line asks how to sign in before it can.
        .merge(routes::cli::router())
        .nest("/api/v1", api)
        // NAIC's frontend's API, under `/api` beside `/api/v1`.
        .merge(naic::router(state.clone()))
        .merge(routes::health::router())
        // The console's pages, with their own sign-in (not API routes: no OpenAPI entry).
        .nest("/console", console::router(state.clone()))
        // The frontend (when configured) for other paths; unknown `/api` paths are a 404.
        .fallback(naic::frontend::fallback);
    // Outside the API's bounds: a Socket.IO connection stays open (its long-polling requests
    // wait up to the ping interval) and is answered by the Socket.IO layer, not by a route.
    let sockets = naic_socket::layer(&state);
    layers::around(routes, layers::BOUNDS)
        .with_state(state)
        .layer(sockets)
}

/// What a process without the API serves: `/metrics` and `/healthz`, so that the counters
/// of its roles (relay, dispatcher, ingester) are scraped where they run.
pub fn metrics_app() -> Router {
    use axum::routing::get;
    Router::new()
        .route("/metrics", get(routes::health::get_metrics))
        .route("/healthz", get(routes::health::get_health))
}

/// The OpenAPI document, as served at `/api/v1/openapi.json`.
pub fn openapi_json() -> String {
    serde_json::to_string_pretty(&openapi::document())
        .expect("the OpenAPI document is plain data, so it serializes")
}
