//! Providers: created, renamed, reordered, enabled or disabled by admins.

use domain::catalog::{Catalog, CatalogCommand, ProviderSpec};
use domain::provisioning::ProviderId;

use super::Changed;
use crate::{App, Caller, Error};

/// A provider to create.
#[derive(Debug, Clone)]
pub struct NewProvider {
    pub id: ProviderId,
    pub name: String,
    /// Enabled unless said otherwise.
    pub enabled: Option<bool>,
    /// After every other provider unless given.
    pub sort_order: Option<i32>,
}

/// What to change of a provider; `None` leaves it.
#[derive(Debug, Clone, Default)]
pub struct ProviderChanges {
    pub name: Option<String>,
    pub sort_order: Option<i32>,
    pub enabled: Option<bool>,
}

impl App {
    /// Creates a provider (admins only).
    #[tracing::instrument(skip_all, fields(provider = new.id.as_str()))]
    pub async fn create_provider(
        &self,
        caller: &Caller,
        new: NewProvider,
    ) -> Result<Changed<ProviderSpec>, Error> {
        crate::users::admin_only(caller)?;
        let sort_order = match new.sort_order {
            Some(s) => s,
            None => self.next_provider_order().await?,
        };
        let spec = ProviderSpec {
            id: new.id.clone(),
            name: new.name,
            enabled: new.enabled.unwrap_or(true),
            sort_order,
        };
        let commands = vec![CatalogCommand::CreateProvider(spec)];
        let committed = self.change_catalog(caller, commands).await?;
        Ok(Changed {
            value: provider(&committed.state, &new.id)?,
            position: committed.last_position(),
        })
    }

    /// Changes a provider's name, order or whether it is enabled (admins only).
    #[tracing::instrument(skip_all, fields(provider = id.as_str()))]
    pub async fn update_provider(
        &self,
        caller: &Caller,
        id: ProviderId,
        changes: ProviderChanges,
    ) -> Result<Changed<ProviderSpec>, Error> {
        let mut commands = vec![];
        if changes.name.is_some() || changes.sort_order.is_some() {
            commands.push(CatalogCommand::UpdateProvider {
                id: id.clone(),
                name: changes.name,
                sort_order: changes.sort_order,
            });
        }
        if let Some(enabled) = changes.enabled {
            commands.push(CatalogCommand::SetProviderEnabled {
                id: id.clone(),
                enabled,
            });
        }
        let committed = self.change_catalog(caller, commands).await?;
        Ok(Changed {
            value: provider(&committed.state, &id)?,
            position: committed.last_position(),
        })
    }

    /// Puts the providers in the order of `ids` (admins only); every provider, in order.
    pub async fn reorder_providers(
        &self,
        caller: &Caller,
        ids: Vec<ProviderId>,
    ) -> Result<Changed<Vec<ProviderSpec>>, Error> {
        let commands = vec![CatalogCommand::ReorderProviders { ids }];
        let committed = self.change_catalog(caller, commands).await?;
        let mut providers: Vec<ProviderSpec> = committed.state.providers().cloned().collect();
        providers.sort_by(|a, b| (a.sort_order, a.id.as_str()).cmp(&(b.sort_order, b.id.as_str())));
        Ok(Changed {
            value: providers,
            position: committed.last_position(),
        })
    }

    async fn next_provider_order(&self) -> Result<i32, Error> {
        let rows = store::catalog::all_providers(&self.pool).await?;
        Ok(rows
            .iter()
            .map(|p| p.sort_order)
            .max()
            .unwrap_or(0)
            .saturating_add(1))
    }
}

fn provider(catalog: &Catalog, id: &ProviderId) -> Result<ProviderSpec, Error> {
    catalog
        .providers()
        .find(|p| p.id == *id)
        .cloned()
        .ok_or_else(|| Error::NotFound(format!("no provider {:?}", id.as_str())))
}

/// The registry's check of the catalog as it is now, as the daemon checks it at start (the
/// catalog may have changed since): an enabled template of a provider the registry lacks or
/// disables. Each problem names its provider and template.
pub async fn catalog_problems(
    pool: &store::PgPool,
    registry: &registry::Registry,
) -> Result<Vec<String>, store::StoreError> {
    let templates = store::catalog::all_templates(pool, None).await?;
    let rows: Vec<registry::CatalogTemplate> = templates
        .into_iter()
        .map(|t| registry::CatalogTemplate {
            provider: t.provider_id,
            template: t.id,
            enabled: t.enabled,
        })
        .collect();
    Ok(registry.catalog_problems(&rows))
}

impl crate::App {
    /// The registry's problems with the catalog now ([`catalog_problems`]); admins only.
    pub async fn validate_providers(
        &self,
        caller: &crate::Caller,
    ) -> Result<Vec<String>, crate::Error> {
        if !caller.principal.is_admin() {
            return Err(crate::Error::forbidden(
                "only admins validate the provider registry",
            ));
        }
        Ok(catalog_problems(&self.pool, &self.registry).await?)
    }
}
