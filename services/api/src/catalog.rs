//! Catalog rows by typed id.
//!
//! `store::catalog`'s readers take `&str` ids here; they are to take `&ProviderId` and
//! `&TemplateId`. Until then these are the API's only places that turn a parsed id back
//! into a string for the store; once the store takes the ids, call it directly and delete
//! this module.

use domain::provisioning::{ProviderId, TemplateId};
use store::catalog::{ProviderRow, TemplateRow};
use store::PgPool;

pub(crate) async fn provider(
    pool: &PgPool,
    id: &ProviderId,
) -> Result<Option<ProviderRow>, store::sqlx::Error> {
    store::catalog::provider(pool, id.as_str()).await
}

pub(crate) async fn template(
    pool: &PgPool,
    provider: &ProviderId,
    id: &TemplateId,
) -> Result<Option<TemplateRow>, store::sqlx::Error> {
    store::catalog::template(pool, provider.as_str(), id.as_str()).await
}

pub(crate) async fn templates(
    pool: &PgPool,
    provider: &ProviderId,
) -> Result<Vec<TemplateRow>, store::sqlx::Error> {
    store::catalog::templates(pool, provider.as_str()).await
}
