//! The taskserv catalog as the dispatcher's [`InstallScripts`]: install jobs' scripts
//! rendered from `PROVISIONING_TASKSERVS_DIR`.

use std::sync::Arc;

use dispatcher::install::{DepOutputs, InstallScripts, StepScripts, VmFacts};
use domain::taskservs::PlannedTaskserv;

struct CatalogScripts(Arc<taskservs::Catalog>);

impl InstallScripts for CatalogScripts {
    fn render(
        &self,
        step: &PlannedTaskserv,
        vm: &VmFacts,
        deps: &DepOutputs,
    ) -> Result<StepScripts, String> {
        let facts = taskservs::VmFacts {
            name: vm.name.clone(),
            address: vm.address.clone(),
            user: vm.user.clone(),
            provider: vm.provider.clone(),
        };
        let rendered = self.0.render(step, &facts, deps).map_err(|e| e.message)?;
        let health_timeout_secs = self.0.get(&step.name).map_or(60, |d| d.health.timeout_secs);
        Ok(StepScripts {
            install: rendered.install,
            health: rendered.health,
            health_timeout_secs,
        })
    }
}

/// The loaded catalog, for the dispatcher.
pub fn scripts(catalog: Arc<taskservs::Catalog>) -> Arc<dyn InstallScripts> {
    Arc::new(CatalogScripts(catalog))
}
