//! `/api/v1/admin/templates`: every template, disabled ones included, and changing them.

use app::catalog::NewTemplate;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::routing::{get, patch, put};
use axum::{Json, Router};
use domain::catalog::{present, TemplateChanges, TemplateSpec};
use domain::provisioning::{ProviderId, TemplateId};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::{invalid, OrderIn};
use crate::answers::Answered;
use crate::routes::AppCaller;
use crate::{ApiError, AppJson, AppState};

pub fn router() -> Router<AppState> {
    Router::new()
        .route(
            "/admin/templates",
            get(list_all_templates).post(create_template),
        )
        .route(
            "/admin/templates/{provider}/{template}",
            patch(update_template),
        )
        .route(
            "/admin/providers/{provider}/templates/order",
            put(reorder_templates),
        )
}

// The admins' wire type: repeats the fields of domain::catalog::TemplateSpec and
// store::catalog::TemplateRow on purpose, so the API, an event and a table can change apart.
/// A template as administrators see it.
#[derive(Debug, Serialize, ToSchema)]
pub struct AdminTemplateOut {
    pub provider: String,
    /// Unique within its provider, e.g. `gpu-xl-l40s`.
    pub id: String,
    pub name: String,
    pub description: String,
    /// The provider's machine type, passed to Terraform.
    pub flavor_name: String,
    /// The provider's image, passed to Terraform.
    pub image_name: String,
    /// The user to log in as over SSH.
    pub username: String,
    pub cpu: i32,
    pub ram_gb: i32,
    pub storage_gb: i32,
    /// The GPU, e.g. `1 x NVIDIA L40S`; none if absent.
    pub gpu: Option<String>,
    /// `simple` or `advanced` (the view that lists it), plus e.g. `gpu`, `bare-metal`,
    /// `jupyter-notebook`.
    pub tags: Vec<String>,
    /// Whether users may create VMs from it.
    pub enabled: bool,
    /// Templates are listed by this within their provider, lower first.
    pub sort_order: i32,
}

impl From<store::catalog::TemplateRow> for AdminTemplateOut {
    fn from(t: store::catalog::TemplateRow) -> Self {
        Self {
            provider: t.provider_id,
            id: t.id,
            name: t.name,
            description: t.description,
            flavor_name: t.flavor_name,
            image_name: t.image_name,
            username: t.username,
            cpu: t.cpu,
            ram_gb: t.ram_gb,
            storage_gb: t.storage_gb,
            gpu: t.gpu,
            tags: t.tags,
            enabled: t.enabled,
            sort_order: t.sort_order,
        }
    }
}

impl From<&TemplateSpec> for AdminTemplateOut {
    fn from(t: &TemplateSpec) -> Self {
        Self {
            provider: t.provider.as_str().to_owned(),
            id: t.id.as_str().to_owned(),
            name: t.name.clone(),
            description: t.description.clone(),
            flavor_name: t.flavor_name.clone(),
            image_name: t.image_name.clone(),
            username: t.username.clone(),
            cpu: t.cpu,
            ram_gb: t.ram_gb,
            storage_gb: t.storage_gb,
            gpu: t.gpu.clone(),
            tags: t.tags.clone(),
            enabled: t.enabled,
            sort_order: t.sort_order,
        }
    }
}

/// A new template of an existing provider.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateTemplateIn {
    /// The provider's id.
    #[schema(value_type = crate::routes::schemas::CatalogId)]
    pub provider: String,
    /// 1 to 64 characters of `[a-z0-9._-]`, unique within the provider.
    #[schema(value_type = crate::routes::schemas::CatalogId)]
    pub id: String,
    #[schema(value_type = crate::routes::schemas::CatalogText)]
    pub name: String,
    /// Default empty.
    #[schema(max_length = 2000)]
    pub description: Option<String>,
    #[schema(value_type = crate::routes::schemas::CatalogText)]
    pub flavor_name: String,
    #[schema(value_type = crate::routes::schemas::CatalogText)]
    pub image_name: String,
    /// Default `ubuntu`.
    #[schema(value_type = Option<crate::routes::schemas::CatalogText>)]
    pub username: Option<String>,
    /// Greater than 0.
    #[schema(minimum = 1)]
    pub cpu: i32,
    /// Greater than 0.
    #[schema(minimum = 1)]
    pub ram_gb: i32,
    /// Greater than 0.
    #[schema(minimum = 1)]
    pub storage_gb: i32,
    #[schema(value_type = Option<crate::routes::schemas::CatalogText>)]
    pub gpu: Option<String>,
    /// Lowercase words, e.g. `["simple", "gpu"]`, at most 32. Default none.
    #[schema(value_type = Option<crate::routes::schemas::Tags>)]
    pub tags: Option<Vec<String>>,
    /// Default `true`.
    pub enabled: Option<bool>,
    /// Default: after the provider's last template.
    pub sort_order: Option<i32>,
}

/// The fields to change; those left out stay as they are. `"gpu": null` removes the GPU.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateTemplateIn {
    #[schema(value_type = Option<crate::routes::schemas::CatalogText>)]
    pub name: Option<String>,
    #[schema(max_length = 2000)]
    pub description: Option<String>,
    #[schema(value_type = Option<crate::routes::schemas::CatalogText>)]
    pub flavor_name: Option<String>,
    #[schema(value_type = Option<crate::routes::schemas::CatalogText>)]
    pub image_name: Option<String>,
    #[schema(value_type = Option<crate::routes::schemas::CatalogText>)]
    pub username: Option<String>,
    #[schema(minimum = 1)]
    pub cpu: Option<i32>,
    #[schema(minimum = 1)]
    pub ram_gb: Option<i32>,
    #[schema(minimum = 1)]
    pub storage_gb: Option<i32>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<crate::routes::schemas::CatalogText>)]
    pub gpu: Option<Option<String>>,
    /// At most 32.
    #[schema(value_type = Option<crate::routes::schemas::Tags>)]
    pub tags: Option<Vec<String>>,
    pub sort_order: Option<i32>,
    pub enabled: Option<bool>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct TemplatesQuery {
    /// Only the templates of this provider.
    #[param(pattern = r"^[^\u0000]*$")]
    pub provider: Option<String>,
}

/// Every template, disabled ones included, in catalog order.
#[utoipa::path(get, path = "/api/v1/admin/templates", tag = "admin",
    security(("bearer" = [])),
    params(TemplatesQuery),
    responses((status = 200, body = [AdminTemplateOut]), (status = 401, body = crate::error::ErrorBody)))]
pub async fn list_all_templates(
    State(state): State<AppState>,
    Query(query): Query<TemplatesQuery>,
) -> Result<Json<Vec<AdminTemplateOut>>, ApiError> {
    let rows = match query.provider.as_deref().map(ProviderId::parse) {
        // No provider has an id the domain refuses.
        Some(Err(_)) => vec![],
        Some(Ok(provider)) => {
            store::catalog::all_templates(&state.app.pool, Some(&provider)).await?
        }
        None => store::catalog::all_templates(&state.app.pool, None).await?,
    };
    Ok(Json(rows.into_iter().map(AdminTemplateOut::from).collect()))
}

/// Adds a template to a provider.
#[utoipa::path(post, path = "/api/v1/admin/templates", tag = "admin",
    security(("bearer" = [])),
    request_body = CreateTemplateIn,
    responses(
        (status = 201, description = "Created", body = AdminTemplateOut),
        (status = 409, description = "The provider has a template with this id", body = crate::error::ErrorBody),
        (status = 422, description = "A field is invalid (or names no provider); `detail` names it", body = crate::error::ErrorBody),
    ))]
pub async fn create_template(
    State(state): State<AppState>,
    AppCaller(caller): AppCaller,
    AppJson(input): AppJson<CreateTemplateIn>,
) -> Result<Answered, ApiError> {
    let new = NewTemplate {
        provider: ProviderId::parse(&input.provider)?,
        id: TemplateId::parse(&input.id).map_err(|e| invalid("id", e.reason))?,
        name: input.name,
        description: input.description,
        flavor_name: input.flavor_name,
        image_name: input.image_name,
        username: input.username,
        cpu: input.cpu,
        ram_gb: input.ram_gb,
        storage_gb: input.storage_gb,
        gpu: input.gpu,
        tags: input.tags,
        enabled: input.enabled,
        sort_order: input.sort_order,
    };
    let changed = state.app.create_template(&caller, new).await?;
    let out = AdminTemplateOut::from(&changed.value);
    Ok(Answered::new(StatusCode::CREATED, &out, changed.position))
}

/// Changes a template's fields or whether it is enabled.
#[utoipa::path(patch, path = "/api/v1/admin/templates/{provider}/{template}", tag = "admin",
    security(("bearer" = [])),
    params(("provider" = String, Path, description = "Provider id"),
           ("template" = String, Path, description = "Template id")),
    request_body = UpdateTemplateIn,
    responses(
        (status = 200, description = "The template after the change", body = AdminTemplateOut),
        (status = 404, body = crate::error::ErrorBody),
        (status = 422, description = "A field is invalid; `detail` names it", body = crate::error::ErrorBody),
    ))]
#[tracing::instrument(skip_all, fields(provider = %provider, template = %template))]
pub async fn update_template(
    State(state): State<AppState>,
    AppCaller(caller): AppCaller,
    Path((provider, template)): Path<(String, String)>,
    AppJson(input): AppJson<UpdateTemplateIn>,
) -> Result<Answered, ApiError> {
    let not_found = || ApiError::NotFound(format!("no template {template:?} of {provider:?}"));
    let provider_id = ProviderId::parse(&provider).map_err(|_| not_found())?;
    let id = TemplateId::parse(&template).map_err(|_| not_found())?;
    let changes = TemplateChanges {
        name: input.name,
        description: input.description,
        flavor_name: input.flavor_name,
        image_name: input.image_name,
        username: input.username,
        cpu: input.cpu,
        ram_gb: input.ram_gb,
        storage_gb: input.storage_gb,
        gpu: input.gpu,
        tags: input.tags,
        sort_order: input.sort_order,
    };
    let changed = state
        .app
        .update_template(&caller, provider_id, id, changes, input.enabled)
        .await?;
    let out = AdminTemplateOut::from(&changed.value);
    Ok(Answered::new(StatusCode::OK, &out, changed.position))
}

/// Orders a provider's templates: `ids` lists each of them once; each gets its position
/// (from 1) as `sort_order`.
#[utoipa::path(put, path = "/api/v1/admin/providers/{provider}/templates/order", tag = "admin",
    security(("bearer" = [])),
    params(("provider" = String, Path, description = "Provider id")),
    request_body = OrderIn,
    responses(
        (status = 200, description = "The provider's templates, in the new order", body = [AdminTemplateOut]),
        (status = 404, body = crate::error::ErrorBody),
        (status = 422, description = "`ids` is not a permutation of the provider's templates", body = crate::error::ErrorBody),
    ))]
#[tracing::instrument(skip_all, fields(provider = %provider))]
pub async fn reorder_templates(
    State(state): State<AppState>,
    AppCaller(caller): AppCaller,
    Path(provider): Path<String>,
    AppJson(input): AppJson<OrderIn>,
) -> Result<Answered, ApiError> {
    let provider_id = ProviderId::parse(&provider)
        .map_err(|_| ApiError::NotFound(format!("no provider {provider:?}")))?;
    let ids = input
        .ids
        .iter()
        .map(|id| TemplateId::parse(id).map_err(|e| invalid("ids", e.reason)))
        .collect::<Result<_, _>>()?;
    let changed = state
        .app
        .reorder_templates(&caller, provider_id, ids)
        .await?;
    let out: Vec<AdminTemplateOut> = changed.value.iter().map(AdminTemplateOut::from).collect();
    Ok(Answered::new(StatusCode::OK, &out, changed.position))
}
