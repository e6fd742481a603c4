//! Cedar policies: who may request VMs of which provider and template, and the limits each
//! user has (VMs, vCPUs, RAM, GPUs, longest duration). Loaded from
//! `PROVISIONING_POLICY_DIR` (its `schema.cedarschema` and every `*.cedar` file) at start,
//! where a bad policy stops the daemon; reloaded on SIGHUP and on
//! `POST /api/v1/admin/policies/reload`, where a bad one keeps the policies in force.
//! Without a directory, the defaults of `deploy/policies` built into the daemon apply.

mod admit;
mod book;

pub use admit::{admit, admit_lifetime, admit_many, denied_lifetime, usage_of};
pub use book::{Denied, PolicyBook, TemplateFacts};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

const DEFAULT_SCHEMA: &str = include_str!("../../../../deploy/policies/schema.cedarschema");
const DEFAULT_POLICIES: &str = include_str!("../../../../deploy/policies/default.cedar");

/// Why policies could not be loaded, naming the file or policy.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct PolicyError(pub String);

/// The policies in force, and how many requests each refused since start.
pub struct Policies {
    dir: Option<PathBuf>,
    current: RwLock<Arc<PolicyBook>>,
    denials: Mutex<BTreeMap<String, u64>>,
}

impl Policies {
    /// Loads the policies of `dir`, or the built-in defaults without one.
    pub fn load(dir: Option<PathBuf>) -> Result<Self, PolicyError> {
        let book = read(dir.as_deref())?;
        Ok(Policies {
            dir,
            current: RwLock::new(Arc::new(book)),
            denials: Mutex::default(),
        })
    }

    /// Reads the policies again; on an error the ones in force stay. How many there are now.
    pub fn reload(&self) -> Result<usize, PolicyError> {
        let book = read(self.dir.as_deref())?;
        let count = book.len();
        *self.current.write().expect("not poisoned") = Arc::new(book);
        Ok(count)
    }

    /// The policies in force.
    pub fn book(&self) -> Arc<PolicyBook> {
        self.current.read().expect("not poisoned").clone()
    }

    /// Counts a refusal by `policy`.
    pub fn denied(&self, policy: &str) {
        *self
            .denials
            .lock()
            .expect("not poisoned")
            .entry(policy.to_owned())
            .or_default() += 1;
    }

    /// The refusals since start, by policy.
    pub fn denials(&self) -> BTreeMap<String, u64> {
        self.denials.lock().expect("not poisoned").clone()
    }

    /// Where the policies come from: the directory, or `built-in`.
    pub fn source(&self) -> String {
        match &self.dir {
            Some(dir) => dir.display().to_string(),
            None => "built-in".into(),
        }
    }
}

/// The policies of `dir` (its schema and `*.cedar` files, in name order), or the defaults.
fn read(dir: Option<&Path>) -> Result<PolicyBook, PolicyError> {
    let Some(dir) = dir else {
        let files = [("default.cedar".to_owned(), DEFAULT_POLICIES.to_owned())];
        return PolicyBook::parse(DEFAULT_SCHEMA, &files);
    };
    let io = |what: &Path, e: std::io::Error| PolicyError(format!("{}: {e}", what.display()));
    let schema_file = dir.join("schema.cedarschema");
    let schema = std::fs::read_to_string(&schema_file).map_err(|e| io(&schema_file, e))?;
    let mut names: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| io(dir, e))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "cedar"))
        .collect();
    names.sort();
    if names.is_empty() {
        return Err(PolicyError(format!("{}: no *.cedar files", dir.display())));
    }
    let mut files = Vec::with_capacity(names.len());
    for path in names {
        let text = std::fs::read_to_string(&path).map_err(|e| io(&path, e))?;
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        files.push((name, text));
    }
    PolicyBook::parse(&schema, &files)
}

#[cfg(test)]
mod tests;
