//! The catalog: the registry's taskservs, each definition checked by the contract, and the
//! checks that span several definitions (dependencies exist, no cycle, no conflict with a
//! requirement).

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use domain::taskservs::TaskservName;
use serde::Deserialize;

use crate::checks;
use crate::definition::Definition;
use crate::nickel;
use crate::render::Templates;

/// A loaded, checked catalog; definitions in registry order.
#[derive(Debug, Clone)]
pub struct Catalog {
    pub(crate) entries: Vec<Entry>,
    index: BTreeMap<TaskservName, usize>,
}

#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub(crate) definition: Definition,
    /// `None` for catalogs built from definitions alone (tests); rendering them fails.
    pub(crate) templates: Option<Templates>,
}

/// Why a catalog did not load: the whole message, naming the file or the taskservs at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct LoadError(pub String);

/// `registry.toml`: which taskservs the deployment offers, in the order they are listed.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Registry {
    #[serde(default)]
    taskservs: Vec<RegistryEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RegistryEntry {
    name: String,
    /// The folder beside `registry.toml`; the name when left out.
    folder: Option<String>,
}

pub(crate) const DEFINITION_FILE: &str = "taskserv.ncl";
pub(crate) const INSTALL_FILE: &str = "install.sh.j2";
pub(crate) const HEALTH_FILE: &str = "health.sh.j2";

impl Catalog {
    /// Loads `dir` (`hcl/taskservs`): `registry.toml`, then each listed folder's definition
    /// (checked by the contract) and templates (parsed), then the checks across them.
    pub fn load(dir: &Path) -> Result<Catalog, LoadError> {
        let registry_path = dir.join("registry.toml");
        let text = fs::read_to_string(&registry_path)
            .map_err(|e| LoadError(format!("{}: {e}", registry_path.display())))?;
        let registry: Registry = toml::from_str(&text)
            .map_err(|e| LoadError(format!("{}: {e}", registry_path.display())))?;
        let mut entries = Vec::new();
        for listed in registry.taskservs {
            let name = TaskservName::parse(&listed.name)
                .map_err(|e| LoadError(format!("{}: {}", registry_path.display(), e.reason)))?;
            let folder = dir.join(listed.folder.as_deref().unwrap_or(&listed.name));
            entries.push(load_entry(&name, &folder)?);
        }
        Catalog::from_entries(entries)
    }

    /// A catalog of definitions without templates, with the same checks as [`Catalog::load`]
    /// across them: for tests of resolving, where evaluating Nickel per case is too slow.
    pub fn from_definitions(definitions: Vec<Definition>) -> Result<Catalog, LoadError> {
        let entries = definitions
            .into_iter()
            .map(|definition| Entry {
                definition,
                templates: None,
            })
            .collect();
        Catalog::from_entries(entries)
    }

    fn from_entries(entries: Vec<Entry>) -> Result<Catalog, LoadError> {
        let mut index = BTreeMap::new();
        for (i, entry) in entries.iter().enumerate() {
            let name = &entry.definition.name;
            if index.insert(name.clone(), i).is_some() {
                return Err(LoadError(format!("{name} is listed twice in the registry")));
            }
        }
        let catalog = Catalog { entries, index };
        checks::check(&catalog).map_err(LoadError)?;
        Ok(catalog)
    }

    pub fn definitions(&self) -> impl Iterator<Item = &Definition> {
        self.entries.iter().map(|e| &e.definition)
    }

    pub fn get(&self, name: &TaskservName) -> Option<&Definition> {
        self.position(name).map(|i| &self.entries[i].definition)
    }

    /// Its place in the registry: plans order independent taskservs by it.
    pub(crate) fn position(&self, name: &TaskservName) -> Option<usize> {
        self.index.get(name).copied()
    }
}

fn load_entry(name: &TaskservName, folder: &Path) -> Result<Entry, LoadError> {
    for file in [DEFINITION_FILE, INSTALL_FILE, HEALTH_FILE] {
        if !folder.join(file).is_file() {
            return Err(LoadError(format!(
                "{}: taskserv {name} has no {file}",
                folder.display()
            )));
        }
    }
    let path = folder.join(DEFINITION_FILE);
    let json = nickel::export_json(&path).map_err(LoadError)?;
    let definition: Definition =
        serde_json::from_str(&json).map_err(|e| LoadError(format!("{}: {e}", path.display())))?;
    if &definition.name != name {
        return Err(LoadError(format!(
            "{}: its name is {:?} but the registry lists it as {:?}",
            path.display(),
            definition.name.as_str(),
            name.as_str()
        )));
    }
    for (param, spec) in &definition.params {
        if let Some(default) = &spec.default {
            if !spec.kind.accepts(default) {
                return Err(LoadError(format!(
                    "{}: the default of param {param} is {default}, not {}",
                    path.display(),
                    spec.kind.article()
                )));
            }
        }
    }
    let read = |file: &str| {
        let path = folder.join(file);
        fs::read_to_string(&path).map_err(|e| LoadError(format!("{}: {e}", path.display())))
    };
    let templates = Templates {
        install: read(INSTALL_FILE)?,
        health: read(HEALTH_FILE)?,
    };
    templates
        .check(name)
        .map_err(|e| LoadError(format!("{}: {e}", folder.display())))?;
    Ok(Entry {
        definition,
        templates: Some(templates),
    })
}
