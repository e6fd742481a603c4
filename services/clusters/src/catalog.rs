//! The deployment's cluster templates: `registry.toml` and one `<name>.ncl` per template,
//! each checked by the contract and then across its fields and against the taskservs.

use std::fs;
use std::path::Path;

use serde::Deserialize;

use crate::checks;
use crate::nickel;
use crate::template::ClusterTemplate;

/// The loaded, checked templates, in registry order.
#[derive(Debug, Clone)]
pub struct ClusterCatalog {
    templates: Vec<ClusterTemplate>,
}

/// Why the templates did not load: the whole message, naming the file and the template.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct LoadError(pub String);

/// `registry.toml`: which templates the deployment offers, in the order they are listed.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Registry {
    #[serde(default)]
    clusters: Vec<RegistryEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RegistryEntry {
    name: String,
    /// The file beside `registry.toml`; `<name>.ncl` when left out.
    file: Option<String>,
}

impl ClusterCatalog {
    /// Loads `dir` (`hcl/clusters`): `registry.toml`, then each listed template, checked by
    /// the contract, across its fields and against `taskservs` (the deployment's catalog).
    pub fn load(dir: &Path, taskservs: &taskservs::Catalog) -> Result<ClusterCatalog, LoadError> {
        let registry_path = dir.join("registry.toml");
        let text = fs::read_to_string(&registry_path)
            .map_err(|e| LoadError(format!("{}: {e}", registry_path.display())))?;
        let registry: Registry = toml::from_str(&text)
            .map_err(|e| LoadError(format!("{}: {e}", registry_path.display())))?;
        let mut templates: Vec<ClusterTemplate> = Vec::new();
        for listed in registry.clusters {
            let file = listed
                .file
                .clone()
                .unwrap_or_else(|| format!("{}.ncl", listed.name));
            let path = dir.join(file);
            let template = load_template(&path, &listed.name, taskservs)?;
            if templates.iter().any(|t| t.name == template.name) {
                return Err(LoadError(format!(
                    "{}: template {} is listed twice",
                    registry_path.display(),
                    template.name
                )));
            }
            templates.push(template);
        }
        Ok(ClusterCatalog { templates })
    }

    pub fn templates(&self) -> &[ClusterTemplate] {
        &self.templates
    }

    pub fn get(&self, name: &str) -> Option<&ClusterTemplate> {
        self.templates.iter().find(|t| t.name == name)
    }
}

fn load_template(
    path: &Path,
    listed: &str,
    taskservs: &taskservs::Catalog,
) -> Result<ClusterTemplate, LoadError> {
    if !path.is_file() {
        return Err(LoadError(format!(
            "{}: template {listed} has no file",
            path.display()
        )));
    }
    let json =
        nickel::export_json(path).map_err(|e| LoadError(format!("template {listed}: {e}")))?;
    let template: ClusterTemplate = serde_json::from_str(&json)
        .map_err(|e| LoadError(format!("{}: template {listed}: {e}", path.display())))?;
    if template.name != listed {
        return Err(LoadError(format!(
            "{}: its name is {:?} but the registry lists it as {listed:?}",
            path.display(),
            template.name
        )));
    }
    checks::check(&template, taskservs)
        .map_err(|e| LoadError(format!("{}: template {listed}: {e}", path.display())))?;
    Ok(template)
}
