//! `/api/v1/cli/config`: what the command line needs to know before anyone is signed in —
//! the OpenID provider and the public client it signs people in with.

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use serde::Serialize;
use utoipa::ToSchema;

use crate::AppState;

pub fn router() -> Router<AppState> {
    Router::new().route("/api/v1/cli/config", get(get_cli_config))
}

/// How the command line signs in to this platform.
#[derive(Debug, Serialize, ToSchema)]
pub struct CliConfig {
    /// Sign-in in a browser through the platform's OpenID provider; `null` when the
    /// platform offers none to the command line (then it signs in with a personal API
    /// token, `provisioning login --token`).
    pub sign_in: Option<CliSignIn>,
}

/// The OpenID provider and the public client (no secret: authorization code with PKCE on
/// a loopback redirect, or the device authorization grant) the command line uses.
#[derive(Debug, Serialize, ToSchema)]
pub struct CliSignIn {
    /// The provider's issuer URL; its endpoints are in its discovery document.
    pub issuer: String,
    /// The public client registered at the provider for the command line.
    pub client_id: String,
    /// The scopes to ask for (`offline_access` among them, for a refresh token).
    pub scopes: Vec<String>,
    /// The audience the platform accepts in bearer JWTs: asked for as the resource
    /// indicator (RFC 8707) where the provider supports it.
    pub audience: String,
}

/// How the command line signs in: the provider and public client, when there is one. No
/// credential needed.
#[utoipa::path(get, path = "/api/v1/cli/config", tag = "auth", responses(
    (status = 200, body = CliConfig),
))]
pub async fn get_cli_config(State(state): State<AppState>) -> Json<CliConfig> {
    let sign_in = state.oidc.as_deref().and_then(|oidc| {
        let cli = oidc.cli.as_ref()?;
        let mut scopes = oidc.scopes.clone();
        if !scopes.iter().any(|s| s == "offline_access") {
            scopes.push("offline_access".into());
        }
        Some(CliSignIn {
            issuer: oidc.issuer.clone(),
            client_id: cli.client_id.clone(),
            scopes,
            audience: cli.audience.clone(),
        })
    });
    Json(CliConfig { sign_in })
}
