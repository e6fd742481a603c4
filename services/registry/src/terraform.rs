//! What a provider's folders declare, read with an HCL parser.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use hcl::{Body, Expression, ObjectKey};

use crate::folders::{flat_files, SourceFile};

/// The variables every provider folder declares; the dispatcher sets them all.
pub const COMMON_VARIABLES: &[&str] = &[
    "vm_id",
    "vm_name",
    "public_key",
    "image_name",
    "flavor_name",
    "allow_ssh_from_v4",
    "username",
    "user_data",
    "boot_callback_url",
    "phone_home_url",
    "duration_hours",
];

/// The outputs the platform reads after an apply.
pub const COMMON_OUTPUTS: &[&str] = &["vm_ip", "vm_provision_status"];

#[derive(Debug, Default)]
pub struct FolderFacts {
    pub variables: BTreeSet<String>,
    pub outputs: BTreeSet<String>,
    /// Required providers and their version constraint, if any.
    pub providers: BTreeMap<String, Option<String>>,
    /// Every name the files declare (`variable x`, `local x`, `resource t.n`…) and the files
    /// declaring it: Terraform refuses a name declared twice in one directory.
    declared: BTreeMap<String, Vec<PathBuf>>,
}

impl FolderFacts {
    /// Parses every `.tf` file of one folder.
    pub fn read(folder: &Path) -> Result<Self, String> {
        let files = flat_files(&[folder.to_owned()]).map_err(|e| e.to_string())?;
        Self::read_files(&files)
    }

    /// Parses every `.tf` file of a working directory's files (see [`flat_files`]).
    pub fn read_files(files: &[SourceFile]) -> Result<Self, String> {
        let mut facts = FolderFacts::default();
        for file in files.iter().filter(|f| f.name.ends_with(".tf")) {
            let path = &file.path;
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            let body: Body = hcl::from_str(&text)
                .map_err(|e| format!("{} is not valid HCL: {e}", path.display()))?;
            facts.add(&body, path);
        }
        Ok(facts)
    }

    fn add(&mut self, body: &Body, path: &Path) {
        let mut declared = vec![];
        for block in body.blocks() {
            let labels: Vec<&str> = block.labels().iter().map(|l| l.as_str()).collect();
            match (block.identifier(), labels.as_slice()) {
                ("variable", [name]) => {
                    self.variables.insert((*name).to_owned());
                    declared.push(format!("variable {name}"));
                }
                ("output", [name]) => {
                    self.outputs.insert((*name).to_owned());
                    declared.push(format!("output {name}"));
                }
                ("locals", _) => {
                    let names = block.body().attributes().map(|a| a.key());
                    declared.extend(names.map(|name| format!("local {name}")));
                }
                ("provider", [name]) => {
                    let alias = block.body().attributes().find(|a| a.key() == "alias");
                    declared.push(match alias.map(|a| a.expr()) {
                        Some(Expression::String(alias)) => format!("provider {name}.{alias}"),
                        _ => format!("provider {name}"),
                    });
                }
                ("terraform", _) => {
                    for required in block
                        .body()
                        .blocks()
                        .filter(|b| b.identifier() == "required_providers")
                    {
                        for attr in required.body().attributes() {
                            declared.push(format!("required provider {}", attr.key()));
                            self.providers
                                .insert(attr.key().to_owned(), version_of(attr.expr()));
                        }
                    }
                }
                // resource, data, module: their labels name them.
                (kind, labels) if !labels.is_empty() => {
                    declared.push(format!("{kind} {}", labels.join(".")));
                }
                _ => {}
            }
        }
        for name in declared {
            self.declared.entry(name).or_default().push(path.to_owned());
        }
    }

    /// Each name declared more than once, with the files declaring it.
    pub fn declared_twice(&self) -> impl Iterator<Item = String> + '_ {
        self.declared
            .iter()
            .filter(|(_, files)| files.len() > 1)
            .map(|(name, files)| {
                let files: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
                format!("{name} is declared more than once: in {}", files.join(", "))
            })
    }

    pub fn missing_variables(&self) -> impl Iterator<Item = &'static str> + '_ {
        COMMON_VARIABLES
            .iter()
            .copied()
            .filter(|v| !self.variables.contains(*v))
    }

    pub fn missing_outputs(&self) -> impl Iterator<Item = &'static str> + '_ {
        COMMON_OUTPUTS
            .iter()
            .copied()
            .filter(|o| !self.outputs.contains(*o))
    }

    pub fn unpinned_providers(&self) -> impl Iterator<Item = &str> + '_ {
        self.providers
            .iter()
            .filter(|(_, version)| version.as_deref().is_none_or(str::is_empty))
            .map(|(name, _)| name.as_str())
    }
}

/// The `version` of a `required_providers` entry such as `{ source = "...", version = "~> 2.1" }`.
fn version_of(expr: &Expression) -> Option<String> {
    let Expression::Object(object) = expr else {
        return None;
    };
    object.iter().find_map(|(key, value)| {
        let key = match key {
            ObjectKey::Identifier(id) => id.as_str().to_owned(),
            ObjectKey::Expression(Expression::String(s)) => s.clone(),
            _ => return None,
        };
        match (key.as_str(), value) {
            ("version", Expression::String(v)) => Some(v.clone()),
            _ => None,
        }
    })
}
