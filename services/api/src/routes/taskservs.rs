//! Taskservs: the catalog (`GET /api/v1/extensions/taskservs`, the seed system's route,
//! beside `GET /api/v1/extensions/providers`), and installs on a running VM (`POST
//! /api/v1/vms/{id}/taskservs`, also as `POST /api/v1/extensions/taskservs/install`).

use std::collections::BTreeMap;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use domain::provisioning::TaskservEntry;
use domain::taskservs::{TaskservName, TaskservRequest, TaskservState};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use super::vms::{answered, idempotent, parse_id, vm_answer, VmOut};
use crate::answers::{Answered, IdempotencyKey};
use crate::routes::AppCaller;
use crate::{ApiError, AppJson, AppState};

/// The most taskservs one request may name.
const MAX_TASKSERVS: usize = 32;

pub fn router(state: AppState) -> Router<AppState> {
    Router::new()
        .route("/extensions/taskservs", get(list_taskservs))
        .route(
            "/extensions/providers",
            get(super::providers::list_providers),
        )
        .route("/extensions/taskservs/install", post(install_extension))
        .route("/extensions/clusters", get(list_cluster_templates))
        .route("/vms/{id}/taskservs", post(install_vm_taskservs))
        // A GET with an admin change's position shows it.
        .route_layer(axum::middleware::from_fn_with_state(
            state,
            crate::answers::wait_for_min_position,
        ))
}

/// A taskserv named in a request, with its params.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskservIn {
    /// A taskserv of `GET /api/v1/extensions/taskservs`, e.g. `grafana`.
    #[schema(min_length = 1, max_length = 63, pattern = r"^[a-z][a-z0-9-]*$")]
    pub name: String,
    /// Its params by name (strings, numbers or booleans, as its definition types them);
    /// those left out take their defaults. Recorded in the VM's events: never a secret.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schema(value_type = Object)]
    pub params: BTreeMap<String, serde_json::Value>,
}

/// The taskservs of a request, parsed: names checked, at most [`MAX_TASKSERVS`].
pub fn parse_requests(input: Vec<TaskservIn>) -> Result<Vec<TaskservRequest>, ApiError> {
    if input.len() > MAX_TASKSERVS {
        return Err(ApiError::Invalid {
            field: "taskservs".into(),
            reason: format!("at most {MAX_TASKSERVS} taskservs"),
        });
    }
    input
        .into_iter()
        .map(|t| {
            Ok(TaskservRequest {
                name: TaskservName::parse(&t.name)?,
                params: t.params,
            })
        })
        .collect()
}

/// A taskserv of a VM and where it is.
#[derive(Debug, Serialize, ToSchema)]
pub struct VmTaskservOut {
    pub name: String,
    /// The version of its definition the VM got.
    pub version: String,
    /// `pending`, `started`, `installed`, `failed` or `skipped` (not run: one before it
    /// failed and stopped the plan, or its job ended first).
    pub state: String,
    /// The job that installs it: the VM's create, or an `install` job.
    pub job: u32,
    /// Named in the request (`false`: pulled in as another's requirement).
    pub requested: bool,
    /// Its params, defaults filled in.
    #[schema(value_type = Object)]
    pub params: BTreeMap<String, serde_json::Value>,
    /// Once installed: what it reported (a URL, where a token is kept).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outputs: Option<BTreeMap<String, String>>,
    /// Once failed: its exit code, if it ran to its end.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// Once failed: the last lines of its output.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_lines: Option<Vec<String>>,
}

impl From<&TaskservEntry> for VmTaskservOut {
    fn from(entry: &TaskservEntry) -> Self {
        let (outputs, exit_code, last_lines) = match &entry.state {
            TaskservState::Installed { outputs } => (Some(outputs.clone()), None, None),
            TaskservState::Failed {
                exit_code,
                last_lines,
            } => (None, *exit_code, Some(last_lines.clone())),
            _ => (None, None, None),
        };
        VmTaskservOut {
            name: entry.step.name.to_string(),
            version: entry.step.version.clone(),
            state: entry.state.as_str().to_owned(),
            job: entry.job.get(),
            requested: entry.step.requested,
            params: entry.step.params.clone(),
            outputs,
            exit_code,
            last_lines,
        }
    }
}

/// A taskserv of the catalog: its definition (from the deployment's files) and where an
/// admin disabled it.
#[derive(Debug, Serialize, ToSchema)]
pub struct TaskservOut {
    pub name: String,
    pub version: String,
    pub description: String,
    pub category: String,
    /// The providers it is offered on; `null`: all.
    pub providers: Option<Vec<String>>,
    /// The OS families it installs on, e.g. `["debian", "ubuntu"]`.
    pub os: Vec<String>,
    /// `[{"name": ..., "kind": "requires" | "prefers_before" | "conflicts_with"}]`.
    #[schema(value_type = Vec<Object>)]
    pub depends_on: serde_json::Value,
    /// Its params by name: `{"type": "string" | "number" | "bool", "default"?, "description"}`;
    /// one without a default must be given.
    #[schema(value_type = Object)]
    pub params: serde_json::Value,
    /// What the VM's template must have: `{cpu, ram_gb, disk_gb, ports}`.
    #[schema(value_type = Object)]
    pub requires: serde_json::Value,
    /// `stop`, `continue` or `retry`: what the rest of the plan does when it fails.
    pub on_error: String,
    pub max_retries: u8,
    /// How long its health check may take to pass, in seconds.
    pub health_timeout_secs: u32,
    /// The providers on which an admin disabled it.
    pub disabled_on: Vec<String>,
    /// The outputs its install script reports once installed, by key, each with what it
    /// holds (a URL, a port, where a secret is kept on the VM: never a secret). Cluster
    /// templates refer to these (`{{ roles.<role>[0].outputs.<key> }}`).
    pub outputs: BTreeMap<String, String>,
}

impl From<app::taskservs::TaskservListing> for TaskservOut {
    fn from(listing: app::taskservs::TaskservListing) -> Self {
        let d = listing.definition;
        let json = |v: serde_json::Result<serde_json::Value>| v.unwrap_or_default();
        TaskservOut {
            name: d.name.to_string(),
            version: d.version,
            description: d.description,
            category: d.category,
            providers: d.providers,
            os: d.os,
            depends_on: json(serde_json::to_value(&d.depends_on)),
            params: json(serde_json::to_value(&d.params)),
            requires: json(serde_json::to_value(&d.requires)),
            on_error: json(serde_json::to_value(d.on_error))
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            max_retries: d.max_retries,
            health_timeout_secs: d.health.timeout_secs,
            disabled_on: listing.disabled_on,
            outputs: d.outputs,
        }
    }
}

/// The catalog's taskservs, in registry order, with their params and dependencies.
#[utoipa::path(get, path = "/api/v1/extensions/taskservs", tag = "taskservs",
    security(("bearer" = [])),
    responses((status = 200, body = [TaskservOut]), (status = 401, body = crate::error::ErrorBody)))]
pub async fn list_taskservs(
    State(state): State<AppState>,
) -> Result<Json<Vec<TaskservOut>>, ApiError> {
    let listing = state.app.list_taskservs().await?;
    Ok(Json(listing.into_iter().map(Into::into).collect()))
}

/// Taskservs to install on a running VM.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"taskservs": [{"name": "redis", "params": {"port": 6380}}]}))]
pub struct InstallIn {
    /// At least one, at most 32; their requirements are added, in order.
    #[schema(min_items = 1, max_items = 32)]
    pub taskservs: Vec<TaskservIn>,
}

/// Installs taskservs on a running VM: their plan (requirements added, in order, checked
/// like a request's) is recorded and an `install` job queued behind the VM's other jobs;
/// the job runs each over SSH with the VM's deploy key, its output in the job's log.
#[utoipa::path(post, path = "/api/v1/vms/{id}/taskservs", tag = "taskservs",
    security(("bearer" = [])),
    request_body = InstallIn,
    params(
        ("id" = String, Path, description = "VM id"),
        ("Idempotency-Key" = Option<String>, Header, description = "Makes a retry of the request safe (kept 24 h)"),
    ),
    responses(
        (status = 202, description = "The install job is queued", body = VmOut),
        (status = 403, description = "Denied by a policy: `detail` names it", body = crate::error::ErrorBody),
        (status = 404, body = crate::error::ErrorBody),
        (status = 409, description = "The VM is not running", body = crate::error::ErrorBody),
        (status = 422, description = "A taskserv cannot be installed: `detail` names it and why", body = crate::error::ErrorBody),
        (status = 503, description = "Nothing was changed; retry after `Retry-After` seconds", body = crate::error::ErrorBody),
    ))]
#[tracing::instrument(skip_all, fields(vm_id = %id))]
pub async fn install_vm_taskservs(
    State(state): State<AppState>,
    Path(id): Path<String>,
    AppCaller(caller): AppCaller,
    IdempotencyKey(key): IdempotencyKey,
    AppJson(input): AppJson<InstallIn>,
) -> Result<Answered, ApiError> {
    let vm = parse_id(&id)?;
    install(state, caller, vm, key, input.taskservs).await
}

/// The seed system's install route: `{vm, taskservs}`.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ExtensionInstallIn {
    /// The VM's id.
    pub vm: Uuid,
    /// At least one, at most 32; their requirements are added, in order.
    #[schema(min_items = 1, max_items = 32)]
    pub taskservs: Vec<TaskservIn>,
}

/// The same as `POST /api/v1/vms/{id}/taskservs`, with the VM in the body.
#[utoipa::path(post, path = "/api/v1/extensions/taskservs/install", tag = "taskservs",
    security(("bearer" = [])),
    request_body = ExtensionInstallIn,
    params(("Idempotency-Key" = Option<String>, Header, description = "Makes a retry of the request safe (kept 24 h)")),
    responses(
        (status = 202, description = "The install job is queued", body = VmOut),
        (status = 403, description = "Denied by a policy: `detail` names it", body = crate::error::ErrorBody),
        (status = 404, body = crate::error::ErrorBody),
        (status = 409, description = "The VM is not running", body = crate::error::ErrorBody),
        (status = 422, description = "A taskserv cannot be installed: `detail` names it and why", body = crate::error::ErrorBody),
        (status = 503, description = "Nothing was changed; retry after `Retry-After` seconds", body = crate::error::ErrorBody),
    ))]
#[tracing::instrument(skip_all)]
pub async fn install_extension(
    State(state): State<AppState>,
    AppCaller(caller): AppCaller,
    IdempotencyKey(key): IdempotencyKey,
    AppJson(input): AppJson<ExtensionInstallIn>,
) -> Result<Answered, ApiError> {
    install(state, caller, input.vm.into(), key, input.taskservs).await
}

async fn install(
    state: AppState,
    caller: app::Caller,
    vm: domain::provisioning::VmId,
    key: Option<String>,
    taskservs: Vec<TaskservIn>,
) -> Result<Answered, ApiError> {
    let request = format!(
        "POST /api/v1/vms/{vm}/taskservs {}",
        serde_json::to_string(&taskservs).expect("plain data")
    );
    let requests = parse_requests(taskservs)?;
    let answer = vm_answer(StatusCode::ACCEPTED);
    let key = idempotent(&key, &request, &answer);
    let outcome = state
        .app
        .install_taskservs(&caller, vm, requests, key)
        .await?;
    Ok(answered(outcome, &answer))
}

/// The cluster templates: roles (counts or ranges, provider templates, taskservs with
/// params), stages, health gates and what a failure does (`docs/clusters.md`).
#[utoipa::path(get, path = "/api/v1/extensions/clusters", tag = "clusters",
    security(("bearer" = [])),
    responses((status = 200, body = [Object]), (status = 401, body = crate::error::ErrorBody)))]
pub async fn list_cluster_templates(
    State(state): State<AppState>,
) -> Json<Vec<clusters::ClusterTemplate>> {
    Json(state.app.clusters.templates().to_vec())
}
