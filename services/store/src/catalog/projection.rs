//! Folds the `Catalog` aggregate's events into the `providers` and `templates` tables.
//!
//! Every statement sets values rather than adding to them, so folding an event twice, or
//! replaying all events onto the tables as they are (a rebuild), gives the same rows.

use domain::catalog::{CatalogEvent, ProviderSpec, TemplateChanges, TemplateSpec};
use domain::provisioning::{ProviderId, TemplateId};
use domain::AggregateKind;
use sqlx::{Postgres, Transaction};

use crate::feed::FeedEvent;

type Tx<'a, 'c> = &'a mut Transaction<'c, Postgres>;

/// Folds `event` if it is one of the catalog's; returns whether it was.
pub async fn fold(tx: Tx<'_, '_>, event: &FeedEvent) -> Result<bool, sqlx::Error> {
    if event.kind() != Some(AggregateKind::Catalog) {
        return Ok(false);
    }
    let catalog_event: CatalogEvent = serde_json::from_value(event.payload.clone())
        .map_err(|e| sqlx::Error::Decode(Box::new(e)))?;
    apply(tx, catalog_event).await?;
    sqlx::query("UPDATE catalog_projection SET last_sequence = $1")
        .bind(event.sequence as i64)
        .execute(&mut **tx)
        .await?;
    Ok(true)
}

async fn apply(tx: Tx<'_, '_>, event: CatalogEvent) -> Result<(), sqlx::Error> {
    match event {
        CatalogEvent::SeedImported {
            providers,
            templates,
        } => {
            for p in &providers {
                upsert_provider(tx, p).await?;
            }
            for t in &templates {
                upsert_template(tx, t).await?;
            }
        }
        CatalogEvent::ProviderCreated(p) => upsert_provider(tx, &p).await?,
        CatalogEvent::ProviderUpdated {
            id,
            name,
            sort_order,
        } => {
            sqlx::query(
                "UPDATE providers SET name = coalesce($2, name),
                        sort_order = coalesce($3, sort_order)
                 WHERE id = $1",
            )
            .bind(id.as_str())
            .bind(name)
            .bind(sort_order)
            .execute(&mut **tx)
            .await?;
        }
        CatalogEvent::ProviderEnabledChanged { id, enabled } => {
            sqlx::query("UPDATE providers SET enabled = $2 WHERE id = $1")
                .bind(id.as_str())
                .bind(enabled)
                .execute(&mut **tx)
                .await?;
        }
        CatalogEvent::ProvidersReordered { ids } => {
            sqlx::query(
                "UPDATE providers p SET sort_order = o.position
                 FROM unnest($1::text[]) WITH ORDINALITY AS o(id, position)
                 WHERE p.id = o.id",
            )
            .bind(provider_ids(&ids))
            .execute(&mut **tx)
            .await?;
        }
        CatalogEvent::TemplateCreated(t) => upsert_template(tx, &t).await?,
        CatalogEvent::TemplateUpdated {
            provider,
            id,
            changes,
        } => update_template(tx, &provider, &id, changes).await?,
        CatalogEvent::TemplateEnabledChanged {
            provider,
            id,
            enabled,
        } => {
            sqlx::query("UPDATE templates SET enabled = $3 WHERE provider_id = $1 AND id = $2")
                .bind(provider.as_str())
                .bind(id.as_str())
                .bind(enabled)
                .execute(&mut **tx)
                .await?;
        }
        CatalogEvent::TaskservEnabledChanged {
            provider,
            taskserv,
            enabled,
        } => {
            sqlx::query(
                "INSERT INTO taskserv_settings (provider_id, taskserv, enabled) VALUES ($1, $2, $3)
                 ON CONFLICT (provider_id, taskserv) DO UPDATE SET enabled = excluded.enabled",
            )
            .bind(provider.as_str())
            .bind(taskserv.as_str())
            .bind(enabled)
            .execute(&mut **tx)
            .await?;
        }
        CatalogEvent::TemplatesReordered { provider, ids } => {
            let ids: Vec<&str> = ids.iter().map(TemplateId::as_str).collect();
            sqlx::query(
                "UPDATE templates t SET sort_order = o.position
                 FROM unnest($2::text[]) WITH ORDINALITY AS o(id, position)
                 WHERE t.provider_id = $1 AND t.id = o.id",
            )
            .bind(provider.as_str())
            .bind(ids)
            .execute(&mut **tx)
            .await?;
        }
    }
    Ok(())
}

fn provider_ids(ids: &[ProviderId]) -> Vec<&str> {
    ids.iter().map(ProviderId::as_str).collect()
}

async fn upsert_provider(tx: Tx<'_, '_>, p: &ProviderSpec) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO providers (id, name, enabled, sort_order) VALUES ($1, $2, $3, $4)
         ON CONFLICT (id) DO UPDATE
         SET name = excluded.name, enabled = excluded.enabled, sort_order = excluded.sort_order",
    )
    .bind(p.id.as_str())
    .bind(&p.name)
    .bind(p.enabled)
    .bind(p.sort_order)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

async fn upsert_template(tx: Tx<'_, '_>, t: &TemplateSpec) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO templates (provider_id, id, name, description, flavor_name, image_name,
                               username, cpu, ram_gb, storage_gb, gpu, tags, enabled, sort_order)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
         ON CONFLICT (provider_id, id) DO UPDATE
         SET name = excluded.name, description = excluded.description,
             flavor_name = excluded.flavor_name, image_name = excluded.image_name,
             username = excluded.username, cpu = excluded.cpu, ram_gb = excluded.ram_gb,
             storage_gb = excluded.storage_gb, gpu = excluded.gpu, tags = excluded.tags,
             enabled = excluded.enabled, sort_order = excluded.sort_order",
    )
    .bind(t.provider.as_str())
    .bind(t.id.as_str())
    .bind(&t.name)
    .bind(&t.description)
    .bind(&t.flavor_name)
    .bind(&t.image_name)
    .bind(&t.username)
    .bind(t.cpu)
    .bind(t.ram_gb)
    .bind(t.storage_gb)
    .bind(&t.gpu)
    .bind(&t.tags)
    .bind(t.enabled)
    .bind(t.sort_order)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

async fn update_template(
    tx: Tx<'_, '_>,
    provider: &ProviderId,
    id: &TemplateId,
    c: TemplateChanges,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE templates SET
             name = coalesce($3, name), description = coalesce($4, description),
             flavor_name = coalesce($5, flavor_name), image_name = coalesce($6, image_name),
             username = coalesce($7, username), cpu = coalesce($8, cpu),
             ram_gb = coalesce($9, ram_gb), storage_gb = coalesce($10, storage_gb),
             gpu = CASE WHEN $11 THEN $12 ELSE gpu END, tags = coalesce($13, tags),
             sort_order = coalesce($14, sort_order)
         WHERE provider_id = $1 AND id = $2",
    )
    .bind(provider.as_str())
    .bind(id.as_str())
    .bind(c.name)
    .bind(c.description)
    .bind(c.flavor_name)
    .bind(c.image_name)
    .bind(c.username)
    .bind(c.cpu)
    .bind(c.ram_gb)
    .bind(c.storage_gb)
    .bind(c.gpu.is_some())
    .bind(c.gpu.flatten())
    .bind(c.tags)
    .bind(c.sort_order)
    .execute(&mut **tx)
    .await?;
    Ok(())
}
