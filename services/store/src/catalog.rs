//! The provider and template catalog.

use domain::catalog::{ProviderSpec, TemplateSpec};
use domain::provisioning::{ProviderId, TemplateId, ValueError};
use serde::Serialize;
use sqlx::PgPool;

#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct ProviderRow {
    pub id: String,
    pub name: String,
    pub enabled: bool,
    pub sort_order: i32,
}

// The row type; domain::catalog::TemplateSpec (events) and api's TemplateOut (wire) repeat
// its fields on purpose, so a table, an event and the API can change apart.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct TemplateRow {
    pub provider_id: String,
    pub id: String,
    pub name: String,
    pub description: String,
    pub flavor_name: String,
    pub image_name: String,
    pub cpu: i32,
    pub ram_gb: i32,
    pub storage_gb: i32,
    pub gpu: Option<String>,
    pub tags: Vec<String>,
    pub enabled: bool,
    /// The login user of the template's image.
    pub username: String,
    pub sort_order: i32,
}

pub async fn providers(pool: &PgPool) -> Result<Vec<ProviderRow>, sqlx::Error> {
    sqlx::query_as("SELECT id, name, enabled, sort_order FROM providers ORDER BY sort_order, id")
        .fetch_all(pool)
        .await
}

/// One provider, disabled or not.
pub async fn provider(pool: &PgPool, id: &ProviderId) -> Result<Option<ProviderRow>, sqlx::Error> {
    sqlx::query_as("SELECT id, name, enabled, sort_order FROM providers WHERE id = $1")
        .bind(id.as_str())
        .fetch_optional(pool)
        .await
}

const TEMPLATE_COLUMNS: &str = "provider_id, id, name, description, flavor_name, image_name, \
     cpu, ram_gb, storage_gb, gpu, tags, enabled, username, sort_order";

/// The enabled templates of a provider, in catalog order.
pub async fn templates(
    pool: &PgPool,
    provider: &ProviderId,
) -> Result<Vec<TemplateRow>, sqlx::Error> {
    sqlx::query_as(&format!(
        "SELECT {TEMPLATE_COLUMNS} FROM templates
         WHERE provider_id = $1 AND enabled ORDER BY sort_order, id"
    ))
    .bind(provider.as_str())
    .fetch_all(pool)
    .await
}

/// One template, disabled or not.
pub async fn template(
    pool: &PgPool,
    provider: &ProviderId,
    id: &TemplateId,
) -> Result<Option<TemplateRow>, sqlx::Error> {
    sqlx::query_as(&format!(
        "SELECT {TEMPLATE_COLUMNS} FROM templates WHERE provider_id = $1 AND id = $2"
    ))
    .bind(provider.as_str())
    .bind(id.as_str())
    .fetch_optional(pool)
    .await
}

/// The taskservs an admin disabled, as `(provider, taskserv)` pairs; every other one is
/// enabled wherever its definition allows.
pub async fn disabled_taskservs(pool: &PgPool) -> Result<Vec<(String, String)>, sqlx::Error> {
    sqlx::query_as(
        "SELECT provider_id, taskserv FROM taskserv_settings WHERE NOT enabled
         ORDER BY provider_id, taskserv",
    )
    .fetch_all(pool)
    .await
}

/// A row as the domain knows it: the ids parsed. (Row and domain types are kept apart on
/// purpose: the table may hold what the domain would refuse, such as a seed row's id.)
impl TryFrom<TemplateRow> for TemplateSpec {
    type Error = ValueError;

    fn try_from(t: TemplateRow) -> Result<Self, ValueError> {
        Ok(TemplateSpec {
            provider: ProviderId::parse(&t.provider_id)?,
            id: TemplateId::parse(&t.id)?,
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
        })
    }
}

impl TryFrom<ProviderRow> for ProviderSpec {
    type Error = ValueError;

    fn try_from(p: ProviderRow) -> Result<Self, ValueError> {
        Ok(ProviderSpec {
            id: ProviderId::parse(&p.id)?,
            name: p.name,
            enabled: p.enabled,
            sort_order: p.sort_order,
        })
    }
}

// Administration of the catalog (the `Catalog` aggregate) and its projection into the
// tables above.
mod admin;
mod projection;

pub use admin::{
    all_providers, all_templates, catalog_events, execute, last_sequence, projected_sequence, seed,
};
pub use projection::fold;
