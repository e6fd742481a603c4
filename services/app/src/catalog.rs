//! The catalog as the use cases see it: which providers may be used now.

use domain::provisioning::ProviderId;

use crate::{App, Error};

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
}
