//! What happened to the catalog. Events are facts: they are never changed, only added.

use cqrs_es::DomainEvent;
use serde::{Deserialize, Deserializer, Serialize};

use crate::provisioning::{ProviderId, TemplateId};

/// A provider as it is created or imported.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderSpec {
    pub id: ProviderId,
    pub name: String,
    pub enabled: bool,
    /// Lower first.
    pub sort_order: i32,
}

// The domain type, stored in events; store's TemplateRow (table) and api's TemplateOut (wire)
// repeat its fields on purpose, so an event, a table and the API can change apart.
/// A template as it is created or imported: everything a VM of this kind gets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TemplateSpec {
    pub provider: ProviderId,
    pub id: TemplateId,
    pub name: String,
    pub description: String,
    pub flavor_name: String,
    pub image_name: String,
    /// The user to log in as over SSH.
    pub username: String,
    pub cpu: i32,
    pub ram_gb: i32,
    pub storage_gb: i32,
    pub gpu: Option<String>,
    pub tags: Vec<String>,
    pub enabled: bool,
    /// Lower first, within the provider.
    pub sort_order: i32,
}

/// The fields of a template that change; `None` leaves a field as it is. `gpu` is
/// `Some(None)` to remove the GPU.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TemplateChanges {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flavor_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ram_gb: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_gb: Option<i32>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub gpu: Option<Option<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sort_order: Option<i32>,
}

impl TemplateChanges {
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// Tells a field set to `null` (`Some(None)`) from a missing one (`None`, by `default`).
pub fn present<'de, D, T>(deserializer: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(deserializer).map(Some)
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", content = "data")]
pub enum CatalogEvent {
    /// Rows that were in the tables (seeded by migrations) before the catalog had events.
    SeedImported {
        providers: Vec<ProviderSpec>,
        templates: Vec<TemplateSpec>,
    },
    ProviderCreated(ProviderSpec),
    /// Only the fields that changed are set.
    ProviderUpdated {
        id: ProviderId,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sort_order: Option<i32>,
    },
    ProviderEnabledChanged {
        id: ProviderId,
        enabled: bool,
    },
    /// Every provider, in the new order: each gets its position (from 1) as `sort_order`.
    ProvidersReordered {
        ids: Vec<ProviderId>,
    },
    TemplateCreated(TemplateSpec),
    /// Only the fields that changed are set.
    TemplateUpdated {
        provider: ProviderId,
        id: TemplateId,
        changes: TemplateChanges,
    },
    TemplateEnabledChanged {
        provider: ProviderId,
        id: TemplateId,
        enabled: bool,
    },
    /// Every template of the provider, in the new order: each gets its position (from 1).
    TemplatesReordered {
        provider: ProviderId,
        ids: Vec<TemplateId>,
    },
    /// A taskserv is offered on the provider's VMs again, or no longer.
    TaskservEnabledChanged {
        provider: ProviderId,
        taskserv: crate::taskservs::TaskservName,
        enabled: bool,
    },
}

impl CatalogEvent {
    pub fn name(&self) -> &'static str {
        match self {
            CatalogEvent::SeedImported { .. } => "SeedImported",
            CatalogEvent::ProviderCreated(_) => "ProviderCreated",
            CatalogEvent::ProviderUpdated { .. } => "ProviderUpdated",
            CatalogEvent::ProviderEnabledChanged { .. } => "ProviderEnabledChanged",
            CatalogEvent::ProvidersReordered { .. } => "ProvidersReordered",
            CatalogEvent::TemplateCreated(_) => "TemplateCreated",
            CatalogEvent::TemplateUpdated { .. } => "TemplateUpdated",
            CatalogEvent::TemplateEnabledChanged { .. } => "TemplateEnabledChanged",
            CatalogEvent::TemplatesReordered { .. } => "TemplatesReordered",
            CatalogEvent::TaskservEnabledChanged { .. } => "TaskservEnabledChanged",
        }
    }
}

impl DomainEvent for CatalogEvent {
    fn event_type(&self) -> String {
        self.name().to_owned()
    }

    fn event_version(&self) -> String {
        "1.0".to_owned()
    }
}
