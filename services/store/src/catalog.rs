//! The provider and template catalog.

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

pub async fn provider(pool: &PgPool, id: &str) -> Result<Option<ProviderRow>, sqlx::Error> {
    sqlx::query_as("SELECT id, name, enabled, sort_order FROM providers WHERE id = $1")
        .bind(id)
        .fetch_optional(pool)
        .await
}

const TEMPLATE_COLUMNS: &str = "provider_id, id, name, description, flavor_name, image_name, \
     cpu, ram_gb, storage_gb, gpu, tags, enabled, username, sort_order";

/// The enabled templates of a provider, in catalog order.
pub async fn templates(pool: &PgPool, provider: &str) -> Result<Vec<TemplateRow>, sqlx::Error> {
    sqlx::query_as(&format!(
        "SELECT {TEMPLATE_COLUMNS} FROM templates
         WHERE provider_id = $1 AND enabled ORDER BY sort_order, id"
    ))
    .bind(provider)
    .fetch_all(pool)
    .await
}

pub async fn template(
    pool: &PgPool,
    provider: &str,
    id: &str,
) -> Result<Option<TemplateRow>, sqlx::Error> {
    sqlx::query_as(&format!(
        "SELECT {TEMPLATE_COLUMNS} FROM templates WHERE provider_id = $1 AND id = $2"
    ))
    .bind(provider)
    .bind(id)
    .fetch_optional(pool)
    .await
}

// Administration of the catalog (the `Catalog` aggregate) and its projection into the
// tables above.
mod admin;
mod projection;

pub use admin::{
    all_providers, all_templates, catalog_events, cqrs, execute, last_sequence, projected_sequence,
    provider_record, seed, template_record, CatalogCommandError, CatalogCqrs,
};
pub use projection::fold;
