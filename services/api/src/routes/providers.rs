use axum::extract::{Path, State};
use axum::routing::get;
use axum::{Json, Router};
use domain::provisioning::ProviderId;
use serde::Serialize;
use utoipa::ToSchema;

use crate::{ApiError, AppState};

pub fn router(state: AppState) -> Router<AppState> {
    Router::new()
        .route("/providers", get(list_providers))
        .route("/providers/{provider}/templates", get(list_templates))
        // A GET with an admin change's position shows it.
        .route_layer(axum::middleware::from_fn_with_state(
            state,
            crate::answers::wait_for_min_position,
        ))
}

/// A cloud (or `local`) that VMs can be created on.
#[derive(Serialize, ToSchema)]
pub struct ProviderOut {
    /// The id used in requests, e.g. `local`.
    pub id: String,
    pub name: String,
    /// Enabled in the catalog and in the provider registry.
    pub enabled: bool,
    pub regions: Vec<String>,
    /// Whether the platform holds every credential the provider needs (never what they are).
    pub credentials_present: bool,
    /// Whether VMs can be requested: enabled, with credentials present.
    pub available: bool,
}

// The wire type; store's TemplateRow (table) and domain's TemplateSpec (events) repeat its
// fields on purpose, so the API, a table and an event can change apart.
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
    /// The login user the VM's SSH key is given to, e.g. `ubuntu`.
    pub username: String,
}

/// The providers of the catalog that the provider registry knows.
#[utoipa::path(get, path = "/api/v1/providers", tag = "catalog",
    security(("bearer" = [])),
    responses((status = 200, body = [ProviderOut]), (status = 401, body = crate::error::ErrorBody)))]
pub async fn list_providers(
    State(state): State<AppState>,
) -> Result<Json<Vec<ProviderOut>>, ApiError> {
    let rows = store::catalog::providers(&state.app.pool).await?;
    Ok(Json(
        rows.into_iter()
            .filter_map(|p| {
                let def = state.app.registry.provider(&p.id)?;
                let enabled = p.enabled && def.enabled;
                let credentials_present = state.app.credentials.present(def);
                Some(ProviderOut {
                    id: p.id,
                    name: p.name,
                    enabled,
                    regions: def.regions.clone(),
                    credentials_present,
                    available: enabled && credentials_present,
                })
            })
            .collect(),
    ))
}

/// Whether users may request VMs of the provider: enabled in the catalog and in the
/// registry, with every credential present.
pub(crate) async fn available(state: &AppState, provider: &ProviderId) -> Result<bool, ApiError> {
    Ok(state.app.provider_available(provider).await?)
}

/// The enabled templates of a provider; none while the provider is disabled or lacks
/// credentials.
#[utoipa::path(get, path = "/api/v1/providers/{provider}/templates", tag = "catalog",
    security(("bearer" = [])),
    params(("provider" = String, Path, description = "Provider id, e.g. `local`")),
    responses((status = 200, body = [TemplateOut]), (status = 404, body = crate::error::ErrorBody)))]
#[tracing::instrument(skip_all, fields(provider = %provider))]
pub async fn list_templates(
    State(state): State<AppState>,
    Path(provider): Path<String>,
) -> Result<Json<Vec<TemplateOut>>, ApiError> {
    let not_found = || ApiError::NotFound(format!("no provider {provider:?}"));
    let id = ProviderId::parse(&provider).map_err(|_| not_found())?;
    if store::catalog::provider(&state.app.pool, &id)
        .await?
        .is_none()
    {
        return Err(not_found());
    }
    if !available(&state, &id).await? {
        return Ok(Json(vec![]));
    }
    let rows = store::catalog::templates(&state.app.pool, &id).await?;
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
                username: t.username,
            })
            .collect(),
    ))
}
