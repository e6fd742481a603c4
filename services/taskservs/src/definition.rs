//! A taskserv's definition, as its `taskserv.ncl` reads once the contract has checked it.

use std::collections::BTreeMap;

use domain::taskservs::{OnError, TaskservName};
use serde::{Deserialize, Deserializer, Serialize};

/// One taskserv of the catalog. Serialized as the API lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Definition {
    pub name: TaskservName,
    pub version: String,
    pub description: String,
    pub category: String,
    /// The providers it is offered on; `None` for all of them (`"all"` in the file).
    #[serde(default, deserialize_with = "providers_or_all")]
    pub providers: Option<Vec<String>>,
    /// OS families of the images it installs on (`"debian"`, `"ubuntu"`).
    pub os: Vec<String>,
    pub depends_on: Vec<Dependency>,
    pub params: BTreeMap<String, ParamSpec>,
    pub requires: Resources,
    pub on_error: OnError,
    pub max_retries: u8,
    pub health: Health,
    /// The keys its install script writes to `$TASKSERV_OUTPUTS`, each with a sentence
    /// saying what it holds (a URL, where a secret is kept: never a secret).
    #[serde(default)]
    pub outputs: BTreeMap<String, String>,
}

impl Definition {
    /// The taskservs it names with `kind`, in the order the file lists them.
    pub fn deps_of(&self, kind: DependencyKind) -> impl Iterator<Item = &TaskservName> {
        self.depends_on
            .iter()
            .filter(move |d| d.kind == kind)
            .map(|d| &d.name)
    }

    /// Whether it is offered on `provider`.
    pub fn offered_on(&self, provider: &str) -> bool {
        match &self.providers {
            None => true,
            Some(list) => list.iter().any(|p| p == provider),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dependency {
    pub name: TaskservName,
    pub kind: DependencyKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DependencyKind {
    /// Pulled into the plan, and installed before the dependant.
    Requires,
    /// Installed before the dependant when both are in the plan; not pulled in.
    PrefersBefore,
    /// Never in one plan with the dependant.
    ConflictsWith,
}

impl DependencyKind {
    /// As definitions write it: `requires`, `prefers_before`, `conflicts_with`.
    pub fn as_str(&self) -> &'static str {
        match self {
            DependencyKind::Requires => "requires",
            DependencyKind::PrefersBefore => "prefers_before",
            DependencyKind::ConflictsWith => "conflicts_with",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParamSpec {
    #[serde(rename = "type")]
    pub kind: ParamType,
    /// `None`: the request must give it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<serde_json::Value>,
    pub description: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ParamType {
    String,
    Number,
    Bool,
}

impl ParamType {
    pub fn accepts(self, value: &serde_json::Value) -> bool {
        match self {
            ParamType::String => value.is_string(),
            ParamType::Number => value.is_number(),
            ParamType::Bool => value.is_boolean(),
        }
    }

    /// "a string", as a sentence says it.
    pub fn article(self) -> &'static str {
        match self {
            ParamType::String => "a string",
            ParamType::Number => "a number",
            ParamType::Bool => "true or false",
        }
    }
}

/// What the VM needs for it: a template smaller than this cannot run it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resources {
    pub cpu: u32,
    pub ram_gb: u32,
    pub disk_gb: u32,
    /// Ports it listens on (for the firewall and for the user to know).
    pub ports: Vec<u16>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Health {
    /// How long the health check may keep failing after install before it counts as failed.
    pub timeout_secs: u32,
}

impl Default for Health {
    fn default() -> Self {
        Health { timeout_secs: 60 }
    }
}

fn providers_or_all<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        List(Vec<String>),
        All(String),
    }
    match Option::<Raw>::deserialize(d)? {
        None => Ok(None),
        Some(Raw::List(list)) => Ok(Some(list)),
        Some(Raw::All(s)) if s == "all" => Ok(None),
        Some(Raw::All(s)) => Err(serde::de::Error::custom(format!(
            "providers is {s:?}: a list of provider names or \"all\""
        ))),
    }
}
