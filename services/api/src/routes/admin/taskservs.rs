//! `/api/v1/admin/providers/{provider}/taskservs/{name}`: offering a taskserv on a
//! provider's VMs, or not. Recorded as the `Catalog` aggregate's events; the definitions
//! themselves come from the deployment's files.

use axum::extract::{Path, State};
use axum::routing::put;
use axum::{Json, Router};
use domain::provisioning::ProviderId;
use domain::taskservs::TaskservName;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::routes::AppCaller;
use crate::{ApiError, AppJson, AppState};

pub fn router() -> Router<AppState> {
    Router::new().route(
        "/admin/providers/{provider}/taskservs/{name}",
        put(set_taskserv_enabled),
    )
}

/// Whether a taskserv is offered on a provider.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskservEnabledIn {
    pub enabled: bool,
}

/// A taskserv's setting on a provider.
#[derive(Debug, Serialize, ToSchema)]
pub struct TaskservEnabledOut {
    pub provider: String,
    pub taskserv: String,
    pub enabled: bool,
}

/// Offers a taskserv on a provider's VMs, or stops offering it (requests naming it, or
/// needing it, are then `422`). Setting what is set already records nothing.
#[utoipa::path(put, path = "/api/v1/admin/providers/{provider}/taskservs/{name}", tag = "admin",
    security(("bearer" = [])),
    request_body = TaskservEnabledIn,
    params(
        ("provider" = String, Path, description = "Provider id"),
        ("name" = String, Path, description = "Taskserv name"),
    ),
    responses(
        (status = 200, body = TaskservEnabledOut),
        (status = 403, body = crate::error::ErrorBody),
        (status = 404, description = "No such provider or taskserv", body = crate::error::ErrorBody),
        (status = 503, description = "Nothing was changed; retry after `Retry-After` seconds", body = crate::error::ErrorBody),
    ))]
pub async fn set_taskserv_enabled(
    State(state): State<AppState>,
    Path((provider, name)): Path<(String, String)>,
    AppCaller(caller): AppCaller,
    AppJson(input): AppJson<TaskservEnabledIn>,
) -> Result<(axum::http::HeaderMap, Json<TaskservEnabledOut>), ApiError> {
    let not_found = || ApiError::NotFound(format!("no taskserv {name:?} on provider {provider:?}"));
    let provider_id = ProviderId::parse(&provider).map_err(|_| not_found())?;
    let taskserv = TaskservName::parse(&name).map_err(|_| not_found())?;
    let position = state
        .app
        .set_taskserv_enabled(&caller, provider_id, taskserv, input.enabled)
        .await?;
    let mut headers = axum::http::HeaderMap::new();
    if let Some(position) = position {
        headers.insert(
            "Provisioning-Position",
            position.to_string().parse().expect("digits"),
        );
    }
    Ok((
        headers,
        Json(TaskservEnabledOut {
            provider,
            taskserv: name,
            enabled: input.enabled,
        }),
    ))
}
