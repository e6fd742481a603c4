//! What the API answers, as the tests read it. Test-side copies of the wire types (the api
//! crate's types only serialize), so a test says `vm.status` rather than `vm["status"]`; a
//! field the API stops sending fails the test that reads it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `VmOut`: a VM as the read model shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Vm {
    pub id: String,
    pub name: String,
    pub provider: String,
    pub template: String,
    pub status: String,
    pub ip: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    pub last_error: Option<String>,
    pub job: Option<Job>,
    pub queue: Vec<Job>,
    pub expires_at: Option<String>,
    pub hostname: Option<String>,
    pub app: Option<Value>,
    pub archived: bool,
    pub drift: Option<Drift>,
    /// The id of the user who asked for it.
    pub owner: String,
}

/// `VmPage`: a page of the VM list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VmPage {
    pub items: Vec<Vm>,
    pub next: Option<String>,
}

/// `DriftOut`: what the last refresh found changed outside Terraform.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Drift {
    pub job_id: u32,
    pub detected_at: String,
    pub resources: Vec<DriftedResource>,
}

/// `DriftedResourceOut`: one drifted resource.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DriftedResource {
    pub address: String,
    pub action: String,
    pub attributes: Vec<String>,
}

/// `JobSummary`: the job a VM runs or is about to run, or one waiting behind it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Job {
    pub id: u32,
    pub action: String,
    pub state: String,
    pub cancel_requested: bool,
}

/// `JobOut`: one job of a VM, with who and when.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobDetail {
    pub id: u32,
    pub action: String,
    pub state: String,
    pub requested_by: Option<String>,
    pub queued_at: String,
    pub started_at: Option<String>,
    pub ended_at: Option<String>,
    pub exit_code: Option<i32>,
    pub reason: Option<String>,
    pub cancel_requested_at: Option<String>,
}

/// `EventOut`: one event of a VM's (or the catalog's) history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    pub sequence: u64,
    #[serde(rename = "type")]
    pub kind: String,
    pub recorded_at: String,
    pub actor: Option<String>,
    pub data: Value,
}

/// `LogOut`: one line Terraform printed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogLine {
    pub job_id: i64,
    pub line: i64,
    pub level: String,
    pub message: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub recorded_at: String,
}

/// `SshKeyOut`: a registered SSH key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SshKey {
    pub id: String,
    pub name: String,
    pub public_key: String,
    pub algorithm: String,
    pub fingerprint: String,
    pub created_at: String,
}

/// `GeneratedSshKeyOut`: a key pair the server made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GeneratedSshKey {
    pub private_key: String,
    pub key: SshKey,
}

/// `ErrorBody`: every error's body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Problem {
    pub code: String,
    pub detail: String,
}

/// The event names of a history, in order.
pub fn kinds(events: &[Event]) -> Vec<&str> {
    events.iter().map(|e| e.kind.as_str()).collect()
}
