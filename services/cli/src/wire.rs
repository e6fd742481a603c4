//! The API's objects as the tables read them: only the fields a table shows. `-o json` and
//! `-o yaml` print the API's answers themselves, so nothing here hides a field from them.

use serde::Deserialize;

/// A VM's id: the UUID the platform gave it (or the client chose).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct VmId(pub String);

impl VmId {
    /// `arg` if it is a UUID: otherwise it is a name to look up.
    pub fn parse(arg: &str) -> Option<VmId> {
        uuid::Uuid::parse_str(arg)
            .ok()
            .map(|id| VmId(id.hyphenated().to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for VmId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

#[derive(Debug, Clone, Deserialize)]
pub struct Vm {
    pub id: VmId,
    pub name: String,
    pub provider: String,
    pub template: String,
    pub status: String,
    pub ip: Option<String>,
    pub created_at: String,
    pub expires_at: Option<String>,
    pub last_error: Option<String>,
    pub job: Option<JobSummary>,
    #[serde(default)]
    pub queue: Vec<JobSummary>,
}

/// A job of a VM that has not ended.
#[derive(Debug, Clone, Deserialize)]
pub struct JobSummary {
    pub id: u32,
    pub action: String,
    pub state: String,
}

#[derive(Debug, Deserialize)]
pub struct VmPage {
    pub items: Vec<serde_json::Value>,
    pub next: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct Provider {
    pub id: String,
    pub name: String,
    pub enabled: bool,
    pub credentials_present: bool,
    pub available: bool,
    pub regions: Vec<String>,
}

#[derive(Debug, Deserialize)]
pub struct Template {
    pub id: String,
    pub provider: String,
    pub cpu: u32,
    pub ram_gb: u32,
    pub storage_gb: u32,
    pub gpu: Option<String>,
    pub image_name: String,
    pub description: String,
    /// The login user; platforms before it was told leave it out.
    #[serde(default)]
    pub username: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct Taskserv {
    pub name: String,
    pub version: String,
    pub category: String,
    /// `[{"name", "kind": "requires" | "prefers_before" | "conflicts_with"}]`.
    pub depends_on: Vec<Dependency>,
    /// `{"type": "string" | "number" | "bool", "default"?, "description"}` by name.
    pub params: serde_json::Map<String, serde_json::Value>,
    pub description: String,
}

#[derive(Debug, Deserialize)]
pub struct Dependency {
    pub name: String,
    pub kind: String,
}

#[derive(Debug, Deserialize)]
pub struct Me {
    pub id: String,
    pub email: String,
    pub role: String,
    pub groups: Vec<String>,
    pub limits: serde_json::Map<String, serde_json::Value>,
    pub usage: serde_json::Map<String, serde_json::Value>,
}

#[derive(Debug, Deserialize)]
pub struct LogLine {
    pub message: String,
}

/// An event of a VM's stream (`data:` of its messages).
#[derive(Debug, Clone, Deserialize)]
pub struct Event {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub data: serde_json::Value,
}

impl Event {
    /// The job an event is about, when it is about one.
    pub fn job_id(&self) -> Option<u32> {
        self.data.get("job_id")?.as_u64().map(|id| id as u32)
    }

    pub fn text(&self, field: &str) -> Option<&str> {
        self.data.get(field)?.as_str()
    }
}

/// `value`, an answer of the API, read as `T` (`what` names it in the error).
pub fn read<T: serde::de::DeserializeOwned>(
    value: &serde_json::Value,
    what: &str,
) -> Result<T, crate::error::CliError> {
    serde_json::from_value(value.clone()).map_err(|e| {
        crate::error::CliError::Local(format!("the platform answered an unexpected {what}: {e}"))
    })
}

/// A cluster as `GET /api/v1/clusters/{id}` answers it.
#[derive(Debug, Clone, Deserialize)]
pub struct Cluster {
    pub id: VmId,
    pub name: String,
    pub template: String,
    pub provider: String,
    pub status: String,
    pub failure: Option<String>,
    pub roles: Vec<ClusterRole>,
    pub nodes: Vec<ClusterNode>,
    pub gates: Vec<ClusterGate>,
    #[serde(default)]
    pub outputs: std::collections::BTreeMap<String, String>,
    pub requested_at: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct ClusterRole {
    pub name: String,
    pub count: u32,
    pub min: u32,
    pub max: u32,
    pub template: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct ClusterNode {
    pub role: String,
    pub index: u32,
    pub vm_id: VmId,
    pub name: String,
    pub status: String,
    pub address: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct ClusterGate {
    pub role: String,
    pub taskserv: String,
    pub stage: u32,
    pub state: String,
    pub why: Option<String>,
}

/// A cluster template of `GET /api/v1/extensions/clusters`, as far as a table shows it.
#[derive(Debug, Clone, Deserialize)]
pub struct ClusterTemplate {
    pub name: String,
    pub description: String,
    pub roles: Vec<TemplateRole>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct TemplateRole {
    pub name: String,
    /// A fixed count, or `{min, max, default}`.
    pub count: serde_json::Value,
}
