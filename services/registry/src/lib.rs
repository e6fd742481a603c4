//! The provider registry, `hcl/providers.toml`: which providers exist, where their
//! Terraform lives, what cloud-init they need and where their credentials come from
//! (never the values). Loaded and validated at start: a registry that does not match its
//! Terraform folders stops the daemon with a message naming the problem.

mod credentials;
mod folders;
mod terraform;

pub use credentials::{CredentialError, Credentials};
pub use folders::{flat_files, FolderError, SourceFile};
pub use terraform::{FolderFacts, COMMON_OUTPUTS, COMMON_VARIABLES};

use std::path::{Path, PathBuf};

use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    providers: Vec<Provider>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Provider {
    pub id: String,
    pub name: String,
    /// The folders of `hcl/` whose files, copied flat in this order, make the provider's
    /// working directory: `folders = ["common", "aws"]`, or `folder = "x"` for one.
    #[serde(alias = "folder", deserialize_with = "folders::one_or_many")]
    pub folders: Vec<String>,
    pub enabled: bool,
    #[serde(default)]
    pub regions: Vec<String>,
    #[serde(default)]
    pub cloud_init: CloudInit,
    #[serde(default)]
    pub credentials: Vec<Credential>,
}

/// How cloud-init prepares VMs of this provider.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CloudInit {
    /// Create the login user with the SSH key, rather than rely on the image's default user.
    #[serde(default)]
    pub create_user: bool,
    /// Install CernVM-FS and the EESSI software stack.
    #[serde(default)]
    pub eessi: bool,
}

/// A credential a runner needs: the variable it gets and where its value comes from.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Credential {
    /// The runner's environment variable; `TF_VAR_<x>` feeds Terraform variable `<x>`.
    pub name: String,
    /// Local executor: the daemon's environment variable (or key of the credentials file).
    pub env: Option<String>,
    /// Kubernetes executor: a Secret reference.
    pub secret: Option<SecretRef>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SecretRef {
    pub name: String,
    pub key: String,
}

impl Provider {
    /// The files of the provider's working directory, by name (see [`flat_files`]).
    pub fn files(&self, hcl_dir: &Path) -> Result<Vec<SourceFile>, FolderError> {
        let folders: Vec<PathBuf> = self.folders.iter().map(|f| hcl_dir.join(f)).collect();
        flat_files(&folders)
    }
}

impl Credential {
    /// The Terraform variable this credential feeds, if it is a `TF_VAR_` variable.
    pub fn terraform_variable(&self) -> Option<&str> {
        self.name.strip_prefix("TF_VAR_")
    }
}

#[derive(Debug, Clone)]
pub struct Registry {
    pub hcl_dir: PathBuf,
    pub providers: Vec<Provider>,
}

/// Everything wrong with a registry, one problem a line.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error("could not read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is invalid: {source}")]
    Parse {
        path: PathBuf,
        source: toml::de::Error,
    },
    #[error("the provider registry has problems:\n  {}", .0.join("\n  "))]
    Invalid(Vec<String>),
}

impl Registry {
    /// Reads `<hcl_dir>/providers.toml` and checks it against the Terraform folders.
    pub fn load(hcl_dir: &Path) -> Result<Self, RegistryError> {
        let path = hcl_dir.join("providers.toml");
        let text = std::fs::read_to_string(&path).map_err(|source| RegistryError::Read {
            path: path.clone(),
            source,
        })?;
        let file: File =
            toml::from_str(&text).map_err(|source| RegistryError::Parse { path, source })?;
        let registry = Registry {
            hcl_dir: hcl_dir.to_owned(),
            providers: file.providers,
        };
        match registry.problems() {
            problems if problems.is_empty() => Ok(registry),
            problems => Err(RegistryError::Invalid(problems)),
        }
    }

    pub fn provider(&self, id: &str) -> Option<&Provider> {
        self.providers.iter().find(|p| p.id == id)
    }

    /// Every mismatch between the registry and the Terraform folders.
    pub fn problems(&self) -> Vec<String> {
        let mut problems = vec![];
        let mut seen = std::collections::HashSet::new();
        for p in &self.providers {
            let mut problem = |what: String| problems.push(format!("provider {:?}: {what}", p.id));
            if !seen.insert(&p.id) {
                problem("is declared twice".into());
            }
            for c in &p.credentials {
                if c.env.is_none() && c.secret.is_none() {
                    problem(format!(
                        "credential {} has no source (give `env` or `secret`)",
                        c.name
                    ));
                }
            }
            let facts = match p.files(&self.hcl_dir) {
                Ok(files) => FolderFacts::read_files(&files),
                Err(e) => Err(e.to_string()),
            };
            let facts = match facts {
                Ok(facts) => facts,
                Err(e) => {
                    problem(e);
                    continue;
                }
            };
            let folder = self.folders_of(p);
            for twice in facts.declared_twice() {
                problem(twice);
            }
            for missing in facts.missing_outputs() {
                problem(format!("{} declares no output {missing}", folder));
            }
            for missing in facts.missing_variables() {
                problem(format!("{} declares no variable {missing}", folder));
            }
            for c in &p.credentials {
                if let Some(var) = c.terraform_variable() {
                    if !facts.variables.contains(var) {
                        problem(format!(
                            "credential {} feeds variable {var}, which {} does not declare",
                            c.name, folder
                        ));
                    }
                }
            }
            for name in facts.unpinned_providers() {
                problem(format!(
                    "{} does not pin a version of provider {name}",
                    folder
                ));
            }
        }
        problems
    }

    /// Where a provider's Terraform is, for messages: `<hcl_dir>/aws`, or
    /// `<hcl_dir>/{common, aws}` for several folders.
    fn folders_of(&self, p: &Provider) -> String {
        match p.folders.as_slice() {
            [one] => self.hcl_dir.join(one).display().to_string(),
            many => format!("{}/{{{}}}", self.hcl_dir.display(), many.join(", ")),
        }
    }

    /// Problems of the catalog against the registry: an enabled template of a provider that
    /// is unknown or disabled here.
    pub fn catalog_problems(&self, templates: &[CatalogTemplate]) -> Vec<String> {
        templates
            .iter()
            .filter(|t| t.enabled)
            .filter_map(|t| {
                let (provider, template) = (&t.provider, &t.template);
                match self.provider(provider) {
                    Some(p) if p.enabled => None,
                    Some(_) => Some(format!(
                        "template {provider}/{template} is enabled but provider {provider:?} is disabled in the registry"
                    )),
                    None => Some(format!(
                        "template {provider}/{template} is enabled but provider {provider:?} is not in the registry"
                    )),
                }
            })
            .collect()
    }
}

/// A template of the catalog, as far as the registry checks it.
#[derive(Debug, Clone)]
pub struct CatalogTemplate {
    pub provider: String,
    pub template: String,
    pub enabled: bool,
}

#[cfg(test)]
mod repo_tests;
#[cfg(test)]
mod tests;
