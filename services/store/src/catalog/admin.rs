//! The catalog as administrators see and change it: every row with its order, the
//! `Catalog` aggregate's commands and its audit history.

use std::collections::HashMap;
use std::time::Duration;

use cqrs_es::persist::PersistedEventStore;
use cqrs_es::{AggregateError, CqrsFramework};
use domain::catalog::{
    Catalog, CatalogCommand, CatalogError, ProviderSpec, Seed, TemplateSpec, CATALOG_ID,
};
use domain::provisioning::{ProviderId, TemplateId};
use postgres_es::PostgresEventRepository;
use sqlx::PgPool;
use time::OffsetDateTime;

use super::{ProviderRow, TemplateRow, TEMPLATE_COLUMNS};
use crate::{AuditEvent, Metadata};

pub type CatalogCqrs =
    CqrsFramework<Catalog, PersistedEventStore<PostgresEventRepository, Catalog>>;

/// The catalog's command handler, given the tables' rows (see `domain::catalog`). No
/// snapshots: admin changes are few.
pub fn cqrs(pool: PgPool, seed: Seed) -> CatalogCqrs {
    let store = PersistedEventStore::new_event_store(PostgresEventRepository::new(pool));
    CqrsFramework::new(store, vec![], seed)
}

#[derive(Debug, thiserror::Error)]
pub enum CatalogCommandError {
    #[error(transparent)]
    Rejected(#[from] CatalogError),
    #[error("the catalog kept changing while the command was retried")]
    Conflict,
    #[error("event store error: {0}")]
    Store(String),
}

/// Executes a command on the catalog, retrying when a concurrent admin committed first.
#[tracing::instrument(skip_all, err)]
pub async fn execute(
    cqrs: &CatalogCqrs,
    command: CatalogCommand,
    metadata: &Metadata,
) -> Result<(), CatalogCommandError> {
    let metadata = metadata_map(metadata);
    for attempt in 0..5u64 {
        match cqrs
            .execute_with_metadata(CATALOG_ID, command.clone(), metadata.clone())
            .await
        {
            Ok(()) => return Ok(()),
            Err(AggregateError::UserError(e)) => return Err(e.into()),
            Err(AggregateError::AggregateConflict) => {
                tokio::time::sleep(Duration::from_millis(5 * (attempt + 1))).await;
            }
            Err(e) => return Err(CatalogCommandError::Store(e.to_string())),
        }
    }
    Err(CatalogCommandError::Conflict)
}

fn metadata_map(metadata: &Metadata) -> HashMap<String, String> {
    let now = OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default();
    HashMap::from([
        ("actor".to_owned(), metadata.actor.clone()),
        ("correlation_id".to_owned(), metadata.correlation_id.clone()),
        ("time".to_owned(), now),
    ])
}

const PROVIDER_RECORD: &str = "SELECT id, name, enabled, sort_order FROM providers";

/// Every provider, disabled ones included, in catalog order.
pub async fn all_providers(pool: &PgPool) -> Result<Vec<ProviderRow>, sqlx::Error> {
    sqlx::query_as(&format!("{PROVIDER_RECORD} ORDER BY sort_order, id"))
        .fetch_all(pool)
        .await
}

pub async fn provider_record(pool: &PgPool, id: &str) -> Result<Option<ProviderRow>, sqlx::Error> {
    sqlx::query_as(&format!("{PROVIDER_RECORD} WHERE id = $1"))
        .bind(id)
        .fetch_optional(pool)
        .await
}

/// Every template (of one provider, if given), disabled ones included, in catalog order.
pub async fn all_templates(
    pool: &PgPool,
    provider: Option<&str>,
) -> Result<Vec<TemplateRow>, sqlx::Error> {
    sqlx::query_as(&format!(
        "SELECT {TEMPLATE_COLUMNS} FROM templates t WHERE $1::text IS NULL OR t.provider_id = $1
         ORDER BY (SELECT p.sort_order FROM providers p WHERE p.id = t.provider_id),
                  t.provider_id, t.sort_order, t.id"
    ))
    .bind(provider)
    .fetch_all(pool)
    .await
}

pub async fn template_record(
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

/// The tables' rows, for the aggregate to learn those it does not know (see
/// `domain::catalog`).
#[tracing::instrument(skip_all, err)]
pub async fn seed(pool: &PgPool) -> Result<Seed, sqlx::Error> {
    let decode = |e: domain::provisioning::ValueError| sqlx::Error::Decode(Box::new(e));
    let providers = all_providers(pool)
        .await?
        .into_iter()
        .map(|p| {
            Ok(ProviderSpec {
                id: ProviderId::parse(&p.id).map_err(decode)?,
                name: p.name,
                enabled: p.enabled,
                sort_order: p.sort_order,
            })
        })
        .collect::<Result<_, sqlx::Error>>()?;
    let templates = all_templates(pool, None)
        .await?
        .into_iter()
        .map(|t| {
            Ok(TemplateSpec {
                provider: ProviderId::parse(&t.provider_id).map_err(decode)?,
                id: TemplateId::parse(&t.id).map_err(decode)?,
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
        })
        .collect::<Result<_, sqlx::Error>>()?;
    Ok(Seed {
        providers,
        templates,
    })
}

/// The sequence of the catalog's last event, 0 if it has none.
pub async fn last_sequence(pool: &PgPool) -> Result<u64, sqlx::Error> {
    let seq: Option<i64> = sqlx::query_scalar(
        "SELECT max(sequence) FROM events WHERE aggregate_type = 'Catalog' AND aggregate_id = $1",
    )
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
    crate::events::audit_events(pool, "Catalog", CATALOG_ID, after, limit).await
}
