use axum::extract::{Path, State};
use axum::routing::get;
use axum::{Json, Router};
use serde::Serialize;
use utoipa::ToSchema;

use crate::{ApiError, AppState};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/providers", get(list_providers))
        .route("/providers/{provider}/templates", get(list_templates))
}

/// A cloud (or `local`) that VMs can be created on.
#[derive(Serialize, ToSchema)]
pub struct ProviderOut {
    /// The id used in requests, e.g. `local`.
    pub id: String,
    pub name: String,
    pub enabled: bool,
}

/// A template: what a VM of this kind gets.
#[derive(Serialize, ToSchema)]
pub struct TemplateOut {
    /// The id used in requests, unique within its provider, e.g. `small`.
    pub id: String,
    pub provider: String,
    pub name: String,
    pub description: String,
    pub flavor_name: String,
    pub image_name: String,
    pub cpu: i32,
    pub ram_gb: i32,
    pub storage_gb: i32,
    pub gpu: Option<String>,
    pub tags: Vec<String>,
}

/// The providers of the catalog.
#[utoipa::path(get, path = "/api/v1/providers", tag = "catalog",
    security(("bearer" = [])),
    responses((status = 200, body = [ProviderOut]), (status = 401, body = crate::error::ErrorBody)))]
pub async fn list_providers(
    State(state): State<AppState>,
) -> Result<Json<Vec<ProviderOut>>, ApiError> {
    let rows = store::catalog::providers(&state.pool).await?;
    Ok(Json(
        rows.into_iter()
            .map(|p| ProviderOut {
                id: p.id,
                name: p.name,
                enabled: p.enabled,
            })
            .collect(),
    ))
}

/// The enabled templates of a provider.
#[utoipa::path(get, path = "/api/v1/providers/{provider}/templates", tag = "catalog",
    security(("bearer" = [])),
    params(("provider" = String, Path, description = "Provider id, e.g. `local`")),
    responses((status = 200, body = [TemplateOut]), (status = 404, body = crate::error::ErrorBody)))]
pub async fn list_templates(
    State(state): State<AppState>,
    Path(provider): Path<String>,
) -> Result<Json<Vec<TemplateOut>>, ApiError> {
    if store::catalog::provider(&state.pool, &provider)
        .await?
        .is_none()
    {
        return Err(ApiError::NotFound(format!("no provider {provider:?}")));
    }
    let rows = store::catalog::templates(&state.pool, &provider).await?;
    Ok(Json(
        rows.into_iter()
            .map(|t| TemplateOut {
                id: t.id,
                provider: t.provider_id,
                name: t.name,
                description: t.description,
                flavor_name: t.flavor_name,
                image_name: t.image_name,
                cpu: t.cpu,
                ram_gb: t.ram_gb,
                storage_gb: t.storage_gb,
                gpu: t.gpu,
                tags: t.tags,
            })
            .collect(),
    ))
}
