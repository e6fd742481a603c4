//! A cluster template, as its file reads once the contract has checked it.

use std::collections::BTreeMap;

use domain::taskservs::TaskservName;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Several VMs made as one: roles of nodes, the stages they are made in, the gates between
/// stages and what a failure does. Serialized as an API lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClusterTemplate {
    pub name: String,
    pub description: String,
    pub roles: Vec<Role>,
    /// Stages, each a list of role names, in the order they are made.
    pub order: Vec<Vec<String>>,
    pub health_gates: Vec<Gate>,
    pub on_failure: OnFailure,
}

/// Nodes that share a provider template choice and taskservs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Role {
    pub name: String,
    pub count: Count,
    /// Provider template ids its nodes may use.
    pub templates: Vec<String>,
    pub taskservs: Vec<TaskservUse>,
}

/// A taskserv a role's nodes get. A string param may hold references to an earlier role's
/// outputs (`{{ roles.server[0].outputs.server_url }}`), kept as written: they are rendered
/// when the node is requested, once the referenced node has reported its outputs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskservUse {
    pub name: TaskservName,
    pub params: BTreeMap<String, serde_json::Value>,
}

/// How many nodes a role has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Count {
    Fixed(u32),
    /// The user may choose within `min..=max`; `default` when they do not.
    Range {
        min: u32,
        max: u32,
        default: u32,
    },
}

impl Count {
    /// The fewest nodes the role can have, whatever the user chooses.
    pub fn min(self) -> u32 {
        match self {
            Count::Fixed(n) => n,
            Count::Range { min, .. } => min,
        }
    }
}

/// A stage's roles wait until `taskserv` is installed (its health check passed) on `nodes`
/// of `role`, at most `within_secs` after the role's nodes were requested.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Gate {
    pub role: String,
    pub taskserv: TaskservName,
    pub nodes: Nodes,
    pub within_secs: u32,
}

/// How many of a role's nodes a gate waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Nodes {
    All,
    Count(u32),
}

impl Serialize for Nodes {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Nodes::All => s.serialize_str("all"),
            Nodes::Count(n) => s.serialize_u32(*n),
        }
    }
}

impl<'de> Deserialize<'de> for Nodes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Count(u32),
            Word(String),
        }
        match Raw::deserialize(d)? {
            Raw::Count(n) => Ok(Nodes::Count(n)),
            Raw::Word(w) if w == "all" => Ok(Nodes::All),
            Raw::Word(w) => Err(serde::de::Error::custom(format!(
                "nodes is {w:?}: \"all\" or a number"
            ))),
        }
    }
}

/// What a cluster whose gate fails does with the nodes made so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnFailure {
    /// Destroy every node made; the cluster ends failed.
    Rollback,
    /// Keep the nodes for inspection; the cluster ends failed.
    Keep,
}

impl ClusterTemplate {
    pub fn role(&self, name: &str) -> Option<&Role> {
        self.roles.iter().find(|r| r.name == name)
    }

    /// The stage (index in `order`) of a role; `None` for one in no stage.
    pub fn stage_of(&self, role: &str) -> Option<usize> {
        self.order.iter().position(|s| s.iter().any(|r| r == role))
    }

    /// Each role's count: `requested` where given (within the role's range), the default
    /// otherwise. The error names the role.
    pub fn resolve_counts(
        &self,
        requested: &BTreeMap<String, u32>,
    ) -> Result<BTreeMap<String, u32>, String> {
        if let Some(unknown) = requested.keys().find(|r| self.role(r).is_none()) {
            let known: Vec<&str> = self.roles.iter().map(|r| r.name.as_str()).collect();
            return Err(format!(
                "role {unknown}: {} has no such role (its roles: {})",
                self.name,
                known.join(", ")
            ));
        }
        let mut counts = BTreeMap::new();
        for role in &self.roles {
            let asked = requested.get(&role.name).copied();
            let count = match (role.count, asked) {
                (Count::Fixed(n), None) => n,
                (Count::Fixed(n), Some(m)) if m == n => n,
                (Count::Fixed(n), Some(m)) => {
                    return Err(format!(
                        "role {}: its count is fixed at {n}; {m} cannot be chosen",
                        role.name
                    ))
                }
                (Count::Range { default, .. }, None) => default,
                (Count::Range { min, max, .. }, Some(m)) if m < min || m > max => {
                    return Err(format!(
                        "role {}: {m} nodes is outside its range {min} to {max}",
                        role.name
                    ))
                }
                (Count::Range { .. }, Some(m)) => m,
            };
            counts.insert(role.name.clone(), count);
        }
        Ok(counts)
    }
}
