//! What a provider folder declares, read with an HCL parser.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use hcl::{Body, Expression, ObjectKey};

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
}

impl FolderFacts {
    /// Parses every `.tf` file of the folder.
    pub fn read(folder: &Path) -> Result<Self, String> {
        let mut facts = FolderFacts::default();
        let entries = std::fs::read_dir(folder)
            .map_err(|e| format!("cannot read {}: {e}", folder.display()))?;
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().and_then(|e| e.to_str()) != Some("tf") {
                continue;
            }
            let text = std::fs::read_to_string(&path)
                .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            let body: Body = hcl::from_str(&text)
                .map_err(|e| format!("{} is not valid HCL: {e}", path.display()))?;
            facts.add(&body);
        }
        Ok(facts)
    }

    fn add(&mut self, body: &Body) {
        for block in body.blocks() {
            let label = block.labels().first().map(|l| l.as_str().to_owned());
            match (block.identifier(), label) {
                ("variable", Some(name)) => {
                    self.variables.insert(name);
                }
                ("output", Some(name)) => {
                    self.outputs.insert(name);
                }
                ("terraform", _) => {
                    for required in block
                        .body()
                        .blocks()
                        .filter(|b| b.identifier() == "required_providers")
                    {
                        for attr in required.body().attributes() {
                            self.providers
                                .insert(attr.key().to_owned(), version_of(attr.expr()));
                        }
                    }
                }
                _ => {}
            }
        }
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
