//! What an administrator (or the API, for the seed) asks of the catalog.

use serde::{Deserialize, Serialize};

use super::events::{ProviderSpec, TemplateChanges, TemplateSpec};
use crate::provisioning::{ProviderId, TemplateId};
use crate::taskservs::TaskservName;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum CatalogCommand {
    CreateProvider(ProviderSpec),
    /// Changes the fields that are `Some`.
    UpdateProvider {
        id: ProviderId,
        name: Option<String>,
        sort_order: Option<i32>,
    },
    SetProviderEnabled {
        id: ProviderId,
        enabled: bool,
    },
    /// Orders every provider: `ids` must name each exactly once.
    ReorderProviders {
        ids: Vec<ProviderId>,
    },
    CreateTemplate(TemplateSpec),
    /// Changes the fields that are set in `changes`.
    UpdateTemplate {
        provider: ProviderId,
        id: TemplateId,
        changes: TemplateChanges,
    },
    SetTemplateEnabled {
        provider: ProviderId,
        id: TemplateId,
        enabled: bool,
    },
    /// Orders every template of a provider: `ids` must name each exactly once.
    ReorderTemplates {
        provider: ProviderId,
        ids: Vec<TemplateId>,
    },
    /// Offers a taskserv on a provider's VMs, or stops offering it. Taskservs are enabled
    /// everywhere their definition allows until an admin disables one. Whether the taskserv
    /// exists is the application's check (definitions come from files).
    SetTaskservEnabled {
        provider: ProviderId,
        taskserv: TaskservName,
        enabled: bool,
    },
}
