//! `/api/v1/admin/providers`: every provider, disabled ones included, and changing them.

use app::catalog::{NewProvider, ProviderChanges};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, patch, put};
use axum::{Json, Router};
use domain::catalog::ProviderSpec;
use domain::provisioning::ProviderId;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{invalid, OrderIn};
use crate::answers::Answered;
use crate::routes::AppCaller;
use crate::{ApiError, AppJson, AppState};

pub fn router() -> Router<AppState> {
    Router::new()
        .route(
            "/admin/providers",
            get(list_all_providers).post(create_provider),
        )
        .route("/admin/providers/order", put(reorder_providers))
        .route("/admin/providers/validate", get(validate_providers))
        .route("/admin/providers/{provider}", patch(update_provider))
}

/// A provider as administrators see it.
#[derive(Debug, Serialize, ToSchema)]
pub struct AdminProviderOut {
    /// The id used in requests, e.g. `nrec-uio`.
    pub id: String,
    pub name: String,
    /// Whether users may create VMs on it.
    pub enabled: bool,
    /// Providers are listed by this, lower first.
    pub sort_order: i32,
}

impl From<store::catalog::ProviderRow> for AdminProviderOut {
    fn from(p: store::catalog::ProviderRow) -> Self {
        Self {
            id: p.id,
            name: p.name,
            enabled: p.enabled,
            sort_order: p.sort_order,
        }
    }
}

impl From<&ProviderSpec> for AdminProviderOut {
    fn from(p: &ProviderSpec) -> Self {
        Self {
            id: p.id.as_str().to_owned(),
            name: p.name.clone(),
            enabled: p.enabled,
            sort_order: p.sort_order,
        }
    }
}

/// A new provider. Its Terraform folder and credentials are configured separately.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateProviderIn {
    /// 1 to 64 characters of `[a-z0-9._-]`, unique.
    #[schema(value_type = crate::routes::schemas::CatalogId)]
    pub id: String,
    /// The name users read, e.g. `NREC UiO`.
    #[schema(value_type = crate::routes::schemas::CatalogText)]
    pub name: String,
    /// Default `true`.
    pub enabled: Option<bool>,
    /// Default: after the last provider.
    pub sort_order: Option<i32>,
}

/// The fields to change; those left out stay as they are.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateProviderIn {
    #[schema(value_type = Option<crate::routes::schemas::CatalogText>)]
    pub name: Option<String>,
    pub sort_order: Option<i32>,
    pub enabled: Option<bool>,
}

/// Every provider, disabled ones included, in catalog order.
#[utoipa::path(get, path = "/api/v1/admin/providers", tag = "admin",
    security(("bearer" = [])),
    responses((status = 200, body = [AdminProviderOut]), (status = 401, body = crate::error::ErrorBody)))]
pub async fn list_all_providers(
    State(state): State<AppState>,
) -> Result<Json<Vec<AdminProviderOut>>, ApiError> {
    let rows = store::catalog::all_providers(&state.app.pool).await?;
    Ok(Json(rows.into_iter().map(AdminProviderOut::from).collect()))
}

/// Adds a provider to the catalog.
#[utoipa::path(post, path = "/api/v1/admin/providers", tag = "admin",
    security(("bearer" = [])),
    request_body = CreateProviderIn,
    responses(
        (status = 201, description = "Created", body = AdminProviderOut),
        (status = 409, description = "A provider with this id exists", body = crate::error::ErrorBody),
        (status = 422, description = "A field is invalid; `detail` names it", body = crate::error::ErrorBody),
    ))]
pub async fn create_provider(
    State(state): State<AppState>,
    AppCaller(caller): AppCaller,
    AppJson(input): AppJson<CreateProviderIn>,
) -> Result<Answered, ApiError> {
    let new = NewProvider {
        id: ProviderId::parse(&input.id).map_err(|e| invalid("id", e.reason))?,
        name: input.name,
        enabled: input.enabled,
        sort_order: input.sort_order,
    };
    let changed = state.app.create_provider(&caller, new).await?;
    let out = AdminProviderOut::from(&changed.value);
    Ok(Answered::new(StatusCode::CREATED, &out, changed.position))
}

/// Changes a provider's name, order or whether it is enabled.
#[utoipa::path(patch, path = "/api/v1/admin/providers/{provider}", tag = "admin",
    security(("bearer" = [])),
    params(("provider" = String, Path, description = "Provider id")),
    request_body = UpdateProviderIn,
    responses(
        (status = 200, description = "The provider after the change", body = AdminProviderOut),
        (status = 404, body = crate::error::ErrorBody),
        (status = 422, description = "A field is invalid; `detail` names it", body = crate::error::ErrorBody),
    ))]
#[tracing::instrument(skip_all, fields(provider = %provider))]
pub async fn update_provider(
    State(state): State<AppState>,
    AppCaller(caller): AppCaller,
    Path(provider): Path<String>,
    AppJson(input): AppJson<UpdateProviderIn>,
) -> Result<Answered, ApiError> {
    let id = path_id(&provider)?;
    let changes = ProviderChanges {
        name: input.name,
        sort_order: input.sort_order,
        enabled: input.enabled,
    };
    let changed = state.app.update_provider(&caller, id, changes).await?;
    let out = AdminProviderOut::from(&changed.value);
    Ok(Answered::new(StatusCode::OK, &out, changed.position))
}

/// Orders the providers: `ids` lists every provider once; each gets its position (from 1)
/// as `sort_order`.
#[utoipa::path(put, path = "/api/v1/admin/providers/order", tag = "admin",
    security(("bearer" = [])),
    request_body = OrderIn,
    responses(
        (status = 200, description = "Every provider, in the new order", body = [AdminProviderOut]),
        (status = 422, description = "`ids` is not a permutation of the providers", body = crate::error::ErrorBody),
    ))]
pub async fn reorder_providers(
    State(state): State<AppState>,
    AppCaller(caller): AppCaller,
    AppJson(input): AppJson<OrderIn>,
) -> Result<Answered, ApiError> {
    let ids = input
        .ids
        .iter()
        .map(|id| ProviderId::parse(id).map_err(|e| invalid("ids", e.reason)))
        .collect::<Result<_, _>>()?;
    let changed = state.app.reorder_providers(&caller, ids).await?;
    let out: Vec<AdminProviderOut> = changed.value.iter().map(AdminProviderOut::from).collect();
    Ok(Answered::new(StatusCode::OK, &out, changed.position))
}

/// A provider id from the path; one that cannot exist is simply not found.
fn path_id(provider: &str) -> Result<ProviderId, ApiError> {
    ProviderId::parse(provider).map_err(|_| ApiError::NotFound(format!("no provider {provider:?}")))
}

/// The registry's check of the catalog as it is now.
#[derive(Debug, Serialize, ToSchema)]
pub struct ValidationOut {
    /// No problem found.
    pub ok: bool,
    /// Providers in the registry (`hcl/providers.toml`).
    pub providers: usize,
    /// Each problem, naming its provider and template: an enabled template of a provider
    /// the registry lacks or disables.
    pub problems: Vec<String>,
}

/// Checks the catalog as it is now against the provider registry, as the daemon does at
/// start and `provisioningd providers validate` does (the catalog may have changed since
/// the daemon started): an enabled template of a provider the registry lacks or disables.
/// Admins.
#[utoipa::path(get, path = "/api/v1/admin/providers/validate", tag = "admin",
    security(("bearer" = [])),
    responses((status = 200, body = ValidationOut), (status = 403, body = crate::error::ErrorBody)))]
#[tracing::instrument(skip_all)]
pub async fn validate_providers(
    State(state): State<AppState>,
    AppCaller(caller): AppCaller,
) -> Result<Json<ValidationOut>, ApiError> {
    let problems = state.app.validate_providers(&caller).await?;
    Ok(Json(ValidationOut {
        ok: problems.is_empty(),
        providers: state.app.registry.providers.len(),
        problems,
    }))
}
