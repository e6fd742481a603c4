//! `/api/v1/admin/policies`: reloading the Cedar policies without a restart, and how many
//! requests each refused.

use std::collections::BTreeMap;

use axum::extract::State;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Serialize;
use utoipa::ToSchema;

use crate::{ApiError, AppState};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/admin/policies/reload", post(reload_policies))
        .route("/admin/policies/denials", get(list_policy_denials))
}

/// The policies now in force.
#[derive(Debug, Serialize, ToSchema)]
pub struct PoliciesOut {
    /// Their directory, or `built-in`.
    pub source: String,
    /// How many policies it holds.
    pub policies: usize,
}

/// Requests refused by policy since this process started.
#[derive(Debug, Serialize, ToSchema)]
pub struct DenialsOut {
    pub total: u64,
    /// By the `@id` of the policy that refused them.
    pub by_policy: BTreeMap<String, u64>,
}

/// Reads the policies again (this process only: each replica reloads on its own call or
/// SIGHUP). Invalid ones are refused with the reason and the policies in force stay.
#[utoipa::path(post, path = "/api/v1/admin/policies/reload", tag = "admin",
    security(("bearer" = [])),
    responses(
        (status = 200, body = PoliciesOut),
        (status = 403, description = "Not an admin", body = crate::error::ErrorBody),
        (status = 422, description = "The policies are invalid (`detail` says where); the old ones stay", body = crate::error::ErrorBody),
    ))]
pub async fn reload_policies(State(state): State<AppState>) -> Result<Json<PoliciesOut>, ApiError> {
    let policies = state.app.reload_policies()?;
    Ok(Json(PoliciesOut {
        source: state.app.policies.source(),
        policies,
    }))
}

/// How many requests each policy refused since this process started.
#[utoipa::path(get, path = "/api/v1/admin/policies/denials", tag = "admin",
    security(("bearer" = [])),
    responses((status = 200, body = DenialsOut),
        (status = 403, description = "Not an admin", body = crate::error::ErrorBody)))]
pub async fn list_policy_denials(State(state): State<AppState>) -> Json<DenialsOut> {
    let by_policy = state.app.policies.denials();
    Json(DenialsOut {
        total: by_policy.values().sum(),
        by_policy,
    })
}
