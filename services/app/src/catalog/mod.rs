//! The catalog: which providers may be used now, and its administration (providers and
//! templates created, changed, enabled or disabled, reordered) by admins. Every change is a
//! command on the `Catalog` aggregate, answered from its own state.

mod providers;
mod templates;

pub use providers::{catalog_problems, NewProvider, ProviderChanges};
pub use templates::NewTemplate;

use domain::catalog::{Catalog, CatalogCommand};
use domain::provisioning::ProviderId;

use crate::{App, Caller, Error};

impl App {
    /// Whether VMs may be requested on `provider` now: it exists, is enabled in the catalog
    /// and in its definition, and its credentials are present.
    pub async fn provider_available(&self, provider: &ProviderId) -> Result<bool, Error> {
        let Some(row) = store::catalog::provider(&self.pool, provider).await? else {
            return Ok(false);
        };
        Ok(row.enabled
            && self
                .registry
                .provider(provider.as_str())
                .is_some_and(|def| def.enabled && self.credentials.present(def)))
    }

    /// Ok when VMs may be requested on `provider` now; else why not, as a refusal of the
    /// request's `provider` field.
    pub(crate) async fn check_provider(&self, provider: &ProviderId) -> Result<(), Error> {
        if store::catalog::provider(&self.pool, provider)
            .await?
            .is_none()
        {
            let reason = format!("{:?} does not exist", provider.as_str());
            return Err(Error::invalid("provider", reason));
        }
        if !self.provider_available(provider).await? {
            let reason = format!("{:?} is disabled or lacks credentials", provider.as_str());
            return Err(Error::invalid("provider", reason));
        }
        Ok(())
    }
}

/// What a catalog change left: `value` as the catalog's own state shows it, and the
/// position of the change's last event (`None` when it changed nothing).
#[derive(Debug, Clone)]
pub struct Changed<T> {
    pub value: T,
    pub position: Option<i64>,
}

impl App {
    /// Runs an admin's `commands` on the catalog, in one commit: the `Catalog` aggregate
    /// validates them and records each as an event with the caller as its actor.
    pub(crate) async fn change_catalog(
        &self,
        caller: &Caller,
        commands: Vec<CatalogCommand>,
    ) -> Result<store::Committed<Catalog>, Error> {
        crate::users::admin_only(caller)?;
        let committed = store::catalog::execute(&self.pool, commands, &caller.metadata()).await?;
        self.remember_write(caller.principal.user, committed.last_position())
            .await;
        Ok(committed)
    }
}
