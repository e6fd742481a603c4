use cqrs_es::event_sink::EventSink;
use cqrs_es::Aggregate;
use serde::{Deserialize, Serialize};

use super::commands::CatalogCommand;
use super::error::CatalogError;
use super::events::{CatalogEvent, ProviderSpec, TemplateSpec};
use super::rules::{permutation, text, validate_template};
use crate::provisioning::{ProviderId, TemplateId};
use crate::taskservs::TaskservName;
use crate::Decide;

/// The id of the one `Catalog` aggregate.
pub const CATALOG_ID: &str = "catalog";

/// Every provider and its templates, in the order they were added.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Catalog {
    providers: Vec<Provider>,
}

/// The rows of the `providers` and `templates` tables when a command arrives: the
/// aggregate's services. See the module documentation.
#[derive(Debug, Clone, Default)]
pub struct Seed {
    pub providers: Vec<ProviderSpec>,
    pub templates: Vec<TemplateSpec>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Provider {
    spec: ProviderSpec,
    templates: Vec<TemplateSpec>,
    /// The taskservs an admin disabled on this provider.
    #[serde(default)]
    disabled_taskservs: Vec<TaskservName>,
}

impl Aggregate for Catalog {
    const TYPE: &'static str = "Catalog";
    type Command = CatalogCommand;
    type Event = CatalogEvent;
    type Error = CatalogError;
    type Services = Seed;

    async fn handle(
        &mut self,
        command: Self::Command,
        seed: &Self::Services,
        sink: &EventSink<Self>,
    ) -> Result<(), Self::Error> {
        for event in Decide::decide(self, command, seed)? {
            sink.write(event, self).await;
        }
        Ok(())
    }

    fn apply(&mut self, event: Self::Event) {
        match event {
            CatalogEvent::SeedImported {
                providers,
                templates,
            } => {
                for spec in providers {
                    self.add_provider(spec);
                }
                for spec in templates {
                    self.add_template(spec);
                }
            }
            CatalogEvent::ProviderCreated(spec) => self.add_provider(spec),
            CatalogEvent::ProviderUpdated {
                id,
                name,
                sort_order,
            } => {
                if let Some(p) = self.provider_mut(&id) {
                    if let Some(name) = name {
                        p.spec.name = name;
                    }
                    p.spec.sort_order = sort_order.unwrap_or(p.spec.sort_order);
                }
            }
            CatalogEvent::ProviderEnabledChanged { id, enabled } => {
                if let Some(p) = self.provider_mut(&id) {
                    p.spec.enabled = enabled;
                }
            }
            CatalogEvent::ProvidersReordered { ids } => {
                for (i, id) in ids.iter().enumerate() {
                    if let Some(p) = self.provider_mut(id) {
                        p.spec.sort_order = position(i);
                    }
                }
            }
            CatalogEvent::TemplateCreated(spec) => self.add_template(spec),
            CatalogEvent::TemplateUpdated {
                provider,
                id,
                changes,
            } => {
                if let Some(t) = self.template_mut(&provider, &id) {
                    changes.apply_to(t);
                }
            }
            CatalogEvent::TemplateEnabledChanged {
                provider,
                id,
                enabled,
            } => {
                if let Some(t) = self.template_mut(&provider, &id) {
                    t.enabled = enabled;
                }
            }
            CatalogEvent::TemplatesReordered { provider, ids } => {
                for (i, id) in ids.iter().enumerate() {
                    if let Some(t) = self.template_mut(&provider, id) {
                        t.sort_order = position(i);
                    }
                }
            }
            CatalogEvent::TaskservEnabledChanged {
                provider,
                taskserv,
                enabled,
            } => {
                if let Some(p) = self.provider_mut(&provider) {
                    p.disabled_taskservs.retain(|t| *t != taskserv);
                    if !enabled {
                        p.disabled_taskservs.push(taskserv);
                    }
                }
            }
        }
    }
}

/// The `sort_order` of the item at `index` of a reorder list: 1, 2, 3, ...
fn position(index: usize) -> i32 {
    i32::try_from(index).map_or(i32::MAX, |i| i.saturating_add(1))
}

impl Decide for Catalog {
    /// Decides the command on the catalog plus the seed rows it does not know yet; records
    /// those rows (`SeedImported`) only together with the command's events.
    fn decide(
        &self,
        command: CatalogCommand,
        seed: &Seed,
    ) -> Result<Vec<CatalogEvent>, CatalogError> {
        let Some(import) = self.import(seed) else {
            return self.decide_known(command);
        };
        let mut seeded = self.clone();
        seeded.apply(import.clone());
        let events = seeded.decide_known(command)?;
        if events.is_empty() {
            return Ok(events);
        }
        Ok(std::iter::once(import).chain(events).collect())
    }
}

impl Catalog {
    /// Every provider, in the order they were added.
    pub fn providers(&self) -> impl Iterator<Item = &ProviderSpec> {
        self.providers.iter().map(|p| &p.spec)
    }

    /// Every template of every provider, in the order they were added.
    pub fn templates(&self) -> impl Iterator<Item = &TemplateSpec> {
        self.providers.iter().flat_map(|p| p.templates.iter())
    }

    /// The catalog plus the seed rows it does not know yet: what a command saw, also when
    /// it changed nothing and so recorded no `SeedImported`.
    pub fn with_seed(mut self, seed: &Seed) -> Catalog {
        if let Some(import) = self.import(seed) {
            self.apply(import);
        }
        self
    }

    /// Decides the command on the catalog as its events made it.
    fn decide_known(&self, command: CatalogCommand) -> Result<Vec<CatalogEvent>, CatalogError> {
        use CatalogCommand as C;
        use CatalogEvent as E;
        let events = match command {
            C::CreateProvider(spec) => {
                if self.provider(&spec.id).is_ok() {
                    return Err(CatalogError::DuplicateProvider(spec.id));
                }
                text("name", &spec.name)?;
                vec![E::ProviderCreated(spec)]
            }
            C::UpdateProvider {
                id,
                name,
                sort_order,
            } => {
                let current = &self.provider(&id)?.spec;
                if let Some(name) = &name {
                    text("name", name)?;
                }
                let name = name.filter(|n| *n != current.name);
                let sort_order = sort_order.filter(|s| *s != current.sort_order);
                if name.is_none() && sort_order.is_none() {
                    vec![]
                } else {
                    vec![E::ProviderUpdated {
                        id,
                        name,
                        sort_order,
                    }]
                }
            }
            C::SetProviderEnabled { id, enabled } => {
                match self.provider(&id)?.spec.enabled == enabled {
                    true => vec![],
                    false => vec![E::ProviderEnabledChanged { id, enabled }],
                }
            }
            C::ReorderProviders { ids } => {
                let current: Vec<_> = self.providers.iter().map(|p| &p.spec).collect();
                permutation(&ids, current.iter().map(|p| &p.id))?;
                let unchanged = ids.iter().enumerate().all(|(i, id)| {
                    current
                        .iter()
                        .any(|p| p.id == *id && p.sort_order == position(i))
                });
                match unchanged {
                    true => vec![],
                    false => vec![E::ProvidersReordered { ids }],
                }
            }
            C::CreateTemplate(spec) => {
                let provider = self.provider(&spec.provider)?;
                if provider.templates.iter().any(|t| t.id == spec.id) {
                    return Err(CatalogError::DuplicateTemplate(spec.provider, spec.id));
                }
                validate_template(&spec)?;
                vec![E::TemplateCreated(spec)]
            }
            C::UpdateTemplate {
                provider,
                id,
                changes,
            } => {
                let current = self.template(&provider, &id)?;
                changes.validate()?;
                let changes = changes.differing_from(current);
                match changes.is_empty() {
                    true => vec![],
                    false => vec![E::TemplateUpdated {
                        provider,
                        id,
                        changes,
                    }],
                }
            }
            C::SetTemplateEnabled {
                provider,
                id,
                enabled,
            } => match self.template(&provider, &id)?.enabled == enabled {
                true => vec![],
                false => vec![E::TemplateEnabledChanged {
                    provider,
                    id,
                    enabled,
                }],
            },
            C::ReorderTemplates { provider, ids } => {
                let templates = &self.provider(&provider)?.templates;
                permutation(&ids, templates.iter().map(|t| &t.id))?;
                let unchanged = ids.iter().enumerate().all(|(i, id)| {
                    templates
                        .iter()
                        .any(|t| t.id == *id && t.sort_order == position(i))
                });
                match unchanged {
                    true => vec![],
                    false => vec![E::TemplatesReordered { provider, ids }],
                }
            }
            C::SetTaskservEnabled {
                provider,
                taskserv,
                enabled,
            } => {
                let disabled = self
                    .provider(&provider)?
                    .disabled_taskservs
                    .contains(&taskserv);
                match disabled != enabled {
                    true => vec![],
                    false => vec![E::TaskservEnabledChanged {
                        provider,
                        taskserv,
                        enabled,
                    }],
                }
            }
        };
        Ok(events)
    }

    /// The seed rows the catalog does not know yet; no event if it knows them all.
    fn import(&self, seed: &Seed) -> Option<CatalogEvent> {
        let mut new_providers: Vec<ProviderSpec> = vec![];
        for spec in seed.providers.iter().cloned() {
            if self.provider(&spec.id).is_err() && !new_providers.iter().any(|p| p.id == spec.id) {
                new_providers.push(spec);
            }
        }
        let mut new_templates: Vec<TemplateSpec> = vec![];
        for spec in seed.templates.iter().cloned() {
            let known_provider = self.provider(&spec.provider).is_ok()
                || new_providers.iter().any(|p| p.id == spec.provider);
            let seen = self.template(&spec.provider, &spec.id).is_ok()
                || new_templates
                    .iter()
                    .any(|t| t.provider == spec.provider && t.id == spec.id);
            if known_provider && !seen {
                new_templates.push(spec);
            }
        }
        if new_providers.is_empty() && new_templates.is_empty() {
            return None;
        }
        Some(CatalogEvent::SeedImported {
            providers: new_providers,
            templates: new_templates,
        })
    }

    fn add_provider(&mut self, spec: ProviderSpec) {
        if self.provider(&spec.id).is_err() {
            self.providers.push(Provider {
                spec,
                templates: vec![],
                disabled_taskservs: vec![],
            });
        }
    }

    fn add_template(&mut self, spec: TemplateSpec) {
        if let Some(p) = self.provider_mut(&spec.provider) {
            if !p.templates.iter().any(|t| t.id == spec.id) {
                p.templates.push(spec);
            }
        }
    }

    fn provider(&self, id: &ProviderId) -> Result<&Provider, CatalogError> {
        self.providers
            .iter()
            .find(|p| p.spec.id == *id)
            .ok_or_else(|| CatalogError::UnknownProvider(id.clone()))
    }

    fn provider_mut(&mut self, id: &ProviderId) -> Option<&mut Provider> {
        self.providers.iter_mut().find(|p| p.spec.id == *id)
    }

    fn template(
        &self,
        provider: &ProviderId,
        id: &TemplateId,
    ) -> Result<&TemplateSpec, CatalogError> {
        self.provider(provider)?
            .templates
            .iter()
            .find(|t| t.id == *id)
            .ok_or_else(|| CatalogError::UnknownTemplate(provider.clone(), id.clone()))
    }

    fn template_mut(
        &mut self,
        provider: &ProviderId,
        id: &TemplateId,
    ) -> Option<&mut TemplateSpec> {
        self.provider_mut(provider)?
            .templates
            .iter_mut()
            .find(|t| t.id == *id)
    }
}

#[cfg(test)]
#[path = "aggregate_tests.rs"]
mod tests;
