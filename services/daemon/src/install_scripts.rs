//! The taskserv catalog as the dispatcher's [`InstallScripts`]: install jobs' scripts
//! rendered from `PROVISIONING_TASKSERVS_DIR`.

use std::path::Path;
use std::sync::Arc;

use dispatcher::install::{DepOutputs, InstallScripts, StepScripts, VmFacts};
use domain::taskservs::PlannedTaskserv;

use crate::StartupError;

struct CatalogScripts(taskservs::Catalog);

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

/// The catalog of `dir` for install jobs; `None` when the folder does not exist (install
/// jobs then fail saying so). A catalog that does not load stops the start.
pub fn load(dir: &Path) -> Result<Option<Arc<dyn InstallScripts>>, StartupError> {
    if !dir.exists() {
        tracing::warn!(dir = %dir.display(), "no taskserv catalog: install jobs will fail");
        return Ok(None);
    }
    let catalog = taskservs::Catalog::load(dir).map_err(StartupError::Taskservs)?;
    Ok(Some(Arc::new(CatalogScripts(catalog))))
}
