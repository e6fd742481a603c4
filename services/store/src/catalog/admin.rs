//! The catalog as administrators see and change it: every row with its order, the
//! `Catalog` aggregate's commands and its audit history.

use cqrs_es::Aggregate;
use domain::catalog::{Catalog, CatalogCommand, CatalogError, Seed, CATALOG_ID};
use domain::provisioning::ProviderId;
use sqlx::PgPool;

use super::{ProviderRow, TemplateRow, TEMPLATE_COLUMNS};
use crate::{AuditEvent, CommandError, Committed, Metadata, StoreError};

/// Executes `commands` in order on the catalog, all or nothing (see
/// [`crate::execute_all`]), given the tables' current rows (see `domain::catalog`). The
/// state it returns includes those rows.
pub async fn execute(
    pool: &PgPool,
    commands: Vec<CatalogCommand>,
    metadata: &Metadata,
) -> Result<Committed<Catalog>, CommandError<CatalogError>> {
    let seed = seed(pool).await?;
    let mut committed: Committed<Catalog> =
        crate::execute_all(pool, CATALOG_ID, &seed, commands, metadata).await?;
    // A command that changed nothing recorded no `SeedImported`; its answer still shows
    // the rows it was decided on.
    committed.state = committed.state.with_seed(&seed);
    Ok(committed)
}

const PROVIDER_QUERY: &str = "SELECT id, name, enabled, sort_order FROM providers";

/// Every provider, disabled ones included, in catalog order.
pub async fn all_providers(pool: &PgPool) -> Result<Vec<ProviderRow>, sqlx::Error> {
    sqlx::query_as(&format!("{PROVIDER_QUERY} ORDER BY sort_order, id"))
        .fetch_all(pool)
        .await
}

/// Every template (of one provider, if given), disabled ones included, in catalog order.
pub async fn all_templates(
    pool: &PgPool,
    provider: Option<&ProviderId>,
) -> Result<Vec<TemplateRow>, sqlx::Error> {
    sqlx::query_as(&format!(
        "SELECT {TEMPLATE_COLUMNS} FROM templates t WHERE $1::text IS NULL OR t.provider_id = $1
         ORDER BY (SELECT p.sort_order FROM providers p WHERE p.id = t.provider_id),
                  t.provider_id, t.sort_order, t.id"
    ))
    .bind(provider.map(ProviderId::as_str))
    .fetch_all(pool)
    .await
}

/// The tables' rows, for the aggregate to learn those it does not know (see
/// `domain::catalog`).
#[tracing::instrument(skip_all, err)]
pub async fn seed(pool: &PgPool) -> Result<Seed, StoreError> {
    let providers = all_providers(pool).await?.into_iter();
    let templates = all_templates(pool, None).await?.into_iter();
    Ok(Seed {
        providers: providers.map(TryInto::try_into).collect::<Result<_, _>>()?,
        templates: templates.map(TryInto::try_into).collect::<Result<_, _>>()?,
    })
}

/// The sequence of the catalog's last event, 0 if it has none.
pub async fn last_sequence(pool: &PgPool) -> Result<u64, sqlx::Error> {
    let seq: Option<i64> = sqlx::query_scalar(
        "SELECT max(sequence) FROM events WHERE aggregate_type = $1 AND aggregate_id = $2",
    )
    .bind(Catalog::TYPE)
    .bind(CATALOG_ID)
    .fetch_one(pool)
    .await?;
    Ok(seq.unwrap_or(0) as u64)
}

/// The sequence of the last catalog event the tables show.
pub async fn projected_sequence(pool: &PgPool) -> Result<u64, sqlx::Error> {
    let seq: i64 = sqlx::query_scalar("SELECT last_sequence FROM catalog_projection")
        .fetch_one(pool)
        .await?;
    Ok(seq as u64)
}

/// The catalog's events after `after`, in order, at most `limit`.
#[tracing::instrument(skip_all, err)]
pub async fn catalog_events(
    pool: &PgPool,
    after: u64,
    limit: i64,
) -> Result<Vec<AuditEvent>, sqlx::Error> {
    crate::events::audit_events(pool, Catalog::TYPE, CATALOG_ID, after, limit).await
}
