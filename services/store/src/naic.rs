//! What the NAIC face reads beyond the platform's own lists: a VM's request (its key,
//! networks and duration, which NAIC's VM objects carry) and a provider's templates with
//! the disabled ones (NAIC's admin page lists them all).

use domain::provisioning::{ProviderId, VmSpec};
use sqlx::types::Json;
use sqlx::PgPool;
use uuid::Uuid;

use crate::catalog::TemplateRow;

/// The request of each VM of `ids` that the read model has one for.
pub async fn specs(pool: &PgPool, ids: &[Uuid]) -> Result<Vec<(Uuid, VmSpec)>, sqlx::Error> {
    let rows: Vec<(Uuid, Json<VmSpec>)> = sqlx::query_as(
        "SELECT id, state->'spec' FROM vm_views
         WHERE id = ANY($1) AND jsonb_typeof(state->'spec') = 'object'",
    )
    .bind(ids)
    .fetch_all(pool)
    .await?;
    Ok(rows.into_iter().map(|(id, spec)| (id, spec.0)).collect())
}

/// Every template of a provider, disabled ones too, in catalog order.
pub async fn all_templates(
    pool: &PgPool,
    provider: &ProviderId,
) -> Result<Vec<TemplateRow>, sqlx::Error> {
    sqlx::query_as(
        "SELECT provider_id, id, name, description, flavor_name, image_name, cpu, ram_gb,
                storage_gb, gpu, tags, enabled, username, sort_order
         FROM templates WHERE provider_id = $1 ORDER BY sort_order, id",
    )
    .bind(provider.as_str())
    .fetch_all(pool)
    .await
}
