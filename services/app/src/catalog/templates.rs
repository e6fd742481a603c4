//! Templates of a provider: created, changed, reordered, enabled or disabled by admins. A
//! template of a provider the registry cannot run stays disabled.

use domain::catalog::{Catalog, CatalogCommand, TemplateChanges, TemplateSpec};
use domain::provisioning::{ProviderId, TemplateId};

use super::Changed;
use crate::{App, Caller, Error};

/// A template to create; the defaults fill what is left out.
#[derive(Debug, Clone)]
pub struct NewTemplate {
    pub provider: ProviderId,
    pub id: TemplateId,
    pub name: String,
    pub description: Option<String>,
    pub flavor_name: String,
    pub image_name: String,
    /// `ubuntu` unless given.
    pub username: Option<String>,
    pub cpu: i32,
    pub ram_gb: i32,
    pub storage_gb: i32,
    pub gpu: Option<String>,
    pub tags: Option<Vec<String>>,
    /// Enabled when its provider can run, unless said otherwise.
    pub enabled: Option<bool>,
    /// After the provider's other templates unless given.
    pub sort_order: Option<i32>,
}

impl App {
    /// Creates a template (admins only).
    #[tracing::instrument(skip_all, fields(provider = new.provider.as_str(), template = new.id.as_str()))]
    pub async fn create_template(
        &self,
        caller: &Caller,
        new: NewTemplate,
    ) -> Result<Changed<TemplateSpec>, Error> {
        crate::users::admin_only(caller)?;
        let provider = new.provider;
        // A new template of a provider the registry cannot run starts disabled.
        let enabled = match new.enabled {
            Some(true) => self.runnable(&provider).map(|()| true)?,
            Some(false) => false,
            None => self.runnable(&provider).is_ok(),
        };
        let sort_order = match new.sort_order {
            Some(s) => s,
            None => {
                let rows = store::catalog::all_templates(&self.pool, Some(&provider)).await?;
                let last = rows.iter().map(|t| t.sort_order).max().unwrap_or(0);
                last.saturating_add(1)
            }
        };
        let spec = TemplateSpec {
            provider: provider.clone(),
            id: new.id.clone(),
            name: new.name,
            description: new.description.unwrap_or_default(),
            flavor_name: new.flavor_name,
            image_name: new.image_name,
            username: new.username.unwrap_or_else(|| "ubuntu".to_owned()),
            cpu: new.cpu,
            ram_gb: new.ram_gb,
            storage_gb: new.storage_gb,
            gpu: new.gpu,
            tags: new.tags.unwrap_or_default(),
            enabled,
            sort_order,
        };
        let commands = vec![CatalogCommand::CreateTemplate(spec)];
        let committed = self
            .change_catalog(caller, commands)
            .await
            .map_err(|e| match e {
                // The provider is a field of the input here, not what the caller names to
                // change; it is all that a new template can fail to find.
                Error::NotFound(_) => Error::invalid(
                    "provider",
                    format!("{:?} does not exist", provider.as_str()),
                ),
                other => other,
            })?;
        Ok(Changed {
            value: template(&committed.state, &provider, &new.id)?,
            position: committed.last_position(),
        })
    }

    /// Changes a template, and whether it is enabled (admins only).
    #[tracing::instrument(skip_all, fields(provider = provider.as_str(), template = id.as_str()))]
    pub async fn update_template(
        &self,
        caller: &Caller,
        provider: ProviderId,
        id: TemplateId,
        changes: TemplateChanges,
        enabled: Option<bool>,
    ) -> Result<Changed<TemplateSpec>, Error> {
        crate::users::admin_only(caller)?;
        if enabled == Some(true) {
            self.runnable(&provider)?;
        }
        let mut commands = vec![];
        if !changes.is_empty() {
            commands.push(CatalogCommand::UpdateTemplate {
                provider: provider.clone(),
                id: id.clone(),
                changes,
            });
        }
        if let Some(enabled) = enabled {
            commands.push(CatalogCommand::SetTemplateEnabled {
                provider: provider.clone(),
                id: id.clone(),
                enabled,
            });
        }
        let committed = self.change_catalog(caller, commands).await?;
        Ok(Changed {
            value: template(&committed.state, &provider, &id)?,
            position: committed.last_position(),
        })
    }

    /// Puts the provider's templates in the order of `ids` (admins only); its templates,
    /// in order.
    #[tracing::instrument(skip_all, fields(provider = provider.as_str()))]
    pub async fn reorder_templates(
        &self,
        caller: &Caller,
        provider: ProviderId,
        ids: Vec<TemplateId>,
    ) -> Result<Changed<Vec<TemplateSpec>>, Error> {
        let command = CatalogCommand::ReorderTemplates {
            provider: provider.clone(),
            ids,
        };
        let committed = self.change_catalog(caller, vec![command]).await?;
        let mut templates: Vec<TemplateSpec> = committed
            .state
            .templates()
            .filter(|t| t.provider == provider)
            .cloned()
            .collect();
        templates.sort_by(|a, b| (a.sort_order, a.id.as_str()).cmp(&(b.sort_order, b.id.as_str())));
        Ok(Changed {
            value: templates,
            position: committed.last_position(),
        })
    }

    /// Ok when the registry can run `provider`; its templates stay disabled otherwise.
    fn runnable(&self, provider: &ProviderId) -> Result<(), Error> {
        match self.registry.provider(provider.as_str()) {
            Some(p) if p.enabled => Ok(()),
            _ => Err(Error::invalid(
                "enabled",
                format!(
                    "provider {:?} is not enabled in the provider registry (hcl/providers.toml); \
                     its templates stay disabled",
                    provider.as_str()
                ),
            )),
        }
    }
}

fn template(
    catalog: &Catalog,
    provider: &ProviderId,
    id: &TemplateId,
) -> Result<TemplateSpec, Error> {
    catalog
        .templates()
        .find(|t| t.provider == *provider && t.id == *id)
        .cloned()
        .ok_or_else(|| {
            Error::NotFound(format!(
                "no template {:?} of {:?}",
                id.as_str(),
                provider.as_str()
            ))
        })
}
