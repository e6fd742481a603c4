//! `/api/v1/vms`: requesting, reading, destroying and watching VMs.

mod actions;
mod archive;
mod create;
mod destroy;
mod drift;
mod expiry;
mod history;
mod jobs;
mod list_stream;
mod read;
mod stream;

pub use actions::*;
pub use archive::*;
pub use create::*;
pub use destroy::*;
pub use drift::*;
pub use expiry::*;
pub use history::*;
pub use jobs::*;
pub use list_stream::*;
pub use read::*;
pub use stream::*;

use app::vms::VmAfter;
use axum::extract::{RawPathParams, Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;
use domain::provisioning::{ActiveJob, AppStatus, Lifecycle, VmId, VmSpec, WaitingJob};
use serde::Serialize;
use time::OffsetDateTime;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::answers::Answered;
use crate::auth::Principal;
use crate::{ApiError, AppState};

pub fn router(state: AppState) -> Router<AppState> {
    Router::new()
        .route("/vms", get(list_vms).post(create_vm))
        .route("/vms/stream", get(stream_vms))
        .route("/vms/{id}", get(get_vm).delete(destroy_vm).patch(patch_vm))
        .route("/vms/{id}/extend", post(extend_vm))
        .route("/vms/{id}/events", get(list_vm_events))
        .route("/vms/{id}/logs", get(list_vm_logs))
        .route("/vms/{id}/stream", get(stream_vm))
        .route("/vms/{id}/retry", post(retry_vm))
        .route("/vms/{id}/refresh", post(refresh_vm))
        .route("/vms/{id}/archive", post(archive_vm))
        .route("/vms/{id}/jobs", get(list_vm_jobs))
        .route("/vms/{id}/jobs/{job}", get(get_vm_job))
        .route("/vms/{id}/jobs/{job}/logs", get(list_vm_job_logs))
        .route("/vms/{id}/jobs/{job}/cancel", post(cancel_vm_job))
        .route(
            "/vms/{id}/jobs/{job}/force-cancel",
            post(force_cancel_vm_job),
        )
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            crate::answers::wait_for_min_position,
        ))
        // Outermost: another user's VM is not found, before anything else looks at it.
        .route_layer(axum::middleware::from_fn_with_state(state, only_visible))
}

/// On every route of one VM (`/vms/{id}...`): a VM the caller may not see
/// ([`Principal::may_see`]) is answered 404, as one that does not exist.
async fn only_visible(
    State(state): State<AppState>,
    principal: Principal,
    params: RawPathParams,
    request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let id = params
        .iter()
        .find(|(name, _)| *name == "id")
        .map(|(_, v)| v);
    if let Some(vm) = id.and_then(|id| id.parse::<VmId>().ok()) {
        if !principal.is_admin() {
            visible(&state, &principal, vm).await?;
        }
    }
    Ok(next.run(request).await)
}

/// Ok when VM `vm` exists and the caller may see it; 404 otherwise.
pub(crate) async fn visible(
    state: &AppState,
    principal: &Principal,
    vm: VmId,
) -> Result<(), ApiError> {
    Ok(state.app.visible(principal, vm).await?)
}

// Deliberately the same fields as `store::views::VmRow`: the wire type is kept stable and
// documented (OpenAPI), the row follows the table.
/// A VM: as the read model shows it, or as a command left it.
#[derive(Debug, Serialize, ToSchema)]
pub struct VmOut {
    pub id: Uuid,
    pub name: String,
    pub provider: String,
    pub template: String,
    /// One of `requested`, `provisioning`, `provisioned` (created; booting, no callback
    /// yet), `initializing` (cloud-init started), `running` (phoned home), `unreachable` (no
    /// phone-home within the boot timeout), `failed`, `destroy_requested`, `destroying`,
    /// `destroyed`.
    pub status: String,
    /// The VM's address, from Terraform's `vm_ip` output, once provisioned.
    pub ip: Option<String>,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub updated_at: OffsetDateTime,
    /// Why the last job failed, as Terraform said it.
    pub last_error: Option<String>,
    /// The job the VM runs or is about to run: none when no job is to come.
    pub job: Option<JobSummary>,
    /// The jobs waiting behind `job`, in the order they will run.
    pub queue: Vec<JobSummary>,
    /// When the expiry sweep destroys the VM (`duration_hours` after the request, moved by
    /// extensions).
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub expires_at: Option<OffsetDateTime>,
    /// The host name the VM reported when it phoned home.
    pub hostname: Option<String>,
    /// What the application on the VM last reported: `{"state": "starting"}`,
    /// `{"state": "ready", "url": ...}` or `{"state": "failed", "reason": ...}`.
    #[schema(value_type = Option<Object>)]
    pub app: Option<AppStatus>,
    /// Archived (`POST /api/v1/vms/{id}/archive`, once destroyed): left out of the list
    /// unless it asks for `archived=true` or `all`.
    pub archived: bool,
    /// What the last refresh found changed outside Terraform, until the next successful
    /// create; none when nothing drifted. Read from the read model: the answer to a
    /// command (202) leaves it out (null), `GET` shows it.
    pub drift: Option<DriftOut>,
    /// The id of the user who asked for it: they and admins see it, no one else.
    pub owner: Uuid,
    /// The VM's taskservs (those its request planned, then those installed on it), in the
    /// order they run, each with its state.
    pub taskservs: Vec<crate::routes::taskservs::VmTaskservOut>,
    /// With `?at=`: the position of the VM's last event at that point, which the answer
    /// shows the VM after. Absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub at_position: Option<i64>,
}

/// A job of a VM that has not ended; `GET /api/v1/vms/{id}/jobs/{job}` has all of it.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct JobSummary {
    /// The job's number within its VM, from 1.
    pub id: u32,
    /// `create`, `destroy`, `refresh` or `install` (taskservs on the running VM).
    pub action: String,
    /// `queued`: waiting behind the VM's running job, or in the job queue for a free runner
    /// (the dispatcher runs at most `PROVISIONING_MAX_RUNNERS` at once, in order);
    /// `running`: a dispatcher claimed it and its runner starts or runs.
    pub state: String,
    /// A cancel was asked: its Terraform was interrupted and the job ends soon.
    pub cancel_requested: bool,
}

impl From<&ActiveJob> for JobSummary {
    fn from(job: &ActiveJob) -> Self {
        JobSummary {
            id: job.id.get(),
            action: job.action.as_str().to_owned(),
            state: job.state().as_str().to_owned(),
            cancel_requested: job.cancel_requested,
        }
    }
}

impl From<&WaitingJob> for JobSummary {
    fn from(job: &WaitingJob) -> Self {
        JobSummary {
            id: job.id.get(),
            action: job.action.as_str().to_owned(),
            state: "queued".to_owned(),
            cancel_requested: false,
        }
    }
}

impl From<store::views::VmRow> for VmOut {
    fn from(row: store::views::VmRow) -> Self {
        Self {
            id: row.id,
            name: row.name,
            provider: row.provider,
            template: row.template,
            status: row.status,
            ip: row.ip,
            created_at: row.created_at,
            updated_at: row.updated_at,
            last_error: row.last_error,
            job: row.active_job.as_ref().map(|job| JobSummary::from(&job.0)),
            queue: row.waiting.0.iter().map(JobSummary::from).collect(),
            expires_at: row.expires_at,
            hostname: row.boot.and_then(|b| b.0.hostname),
            app: row.app.map(|a| a.0),
            archived: row.archived,
            drift: row.drift.as_ref().map(|d| DriftOut::from(&d.0)),
            owner: row.owner,
            taskservs: row.taskservs.0.iter().map(Into::into).collect(),
            at_position: None,
        }
    }
}

pub(crate) fn parse_id(id: &str) -> Result<VmId, ApiError> {
    id.parse()
        .map_err(|_| ApiError::NotFound(format!("no VM {id:?}: ids are UUIDs")))
}

/// The VM as a command left it (the aggregate's state): what a command answers, with no
/// wait for the read model. Computed as the read model computes it (the same lifecycle), so
/// a GET that waited for the command's position shows the same. `None` before the VM was
/// requested.
fn vm_from_state(after: &VmAfter) -> Option<VmOut> {
    let spec = after.spec.as_ref()?;
    let mut out = vm_out(
        after.id,
        spec,
        &after.lifecycle,
        after.created_at,
        after.updated_at,
    );
    out.archived = after.archived;
    Some(out)
}

fn vm_out(
    vm: VmId,
    spec: &VmSpec,
    lifecycle: &Lifecycle,
    created_at: OffsetDateTime,
    updated_at: OffsetDateTime,
) -> VmOut {
    VmOut {
        id: vm.as_uuid(),
        name: spec.name.as_str().to_owned(),
        provider: spec.provider.as_str().to_owned(),
        template: spec.template.as_str().to_owned(),
        status: lifecycle.status.as_str().to_owned(),
        ip: lifecycle.ip.clone(),
        created_at,
        updated_at,
        last_error: lifecycle.last_error.clone(),
        job: lifecycle.active_job.as_ref().map(JobSummary::from),
        queue: lifecycle.waiting.iter().map(JobSummary::from).collect(),
        expires_at: lifecycle.expiry.map(|e| e.expires_at),
        hostname: lifecycle.boot.as_ref().and_then(|b| b.hostname.clone()),
        app: lifecycle.app.clone(),
        archived: false,
        drift: None,
        owner: spec.owner.as_uuid(),
        taskservs: lifecycle.taskservs.iter().map(Into::into).collect(),
        at_position: None,
    }
}

/// How this face answers a VM command with `status`: the VM as the command left it, and
/// the position of the command's last event. The same answer is kept under an
/// `Idempotency-Key`, so a replay is the same bytes.
pub(crate) fn vm_answer(status: StatusCode) -> impl Fn(&VmAfter) -> app::Kept + Send + Sync {
    move |after| app::Kept {
        status: status.as_u16(),
        body: serde_json::to_value(vm_from_state(after)).expect("a VM is plain data"),
        position: after.position,
    }
}

/// The request's `Idempotency-Key` for the application layer: `request` says what the
/// request was (with the caller, for a create), `answer` how it is answered.
pub(crate) fn idempotent<'a>(
    key: &'a Option<String>,
    request: &'a str,
    answer: &'a (dyn Fn(&VmAfter) -> app::Kept + Send + Sync),
) -> app::vms::VmKey<'a> {
    key.as_deref().map(|key| app::Idempotent {
        key,
        request,
        answer,
    })
}

/// The answer to a VM command: its result answered by `answer`, or the answer kept for the
/// same request.
pub(crate) fn answered(
    outcome: app::Outcome<VmAfter>,
    answer: &(dyn Fn(&VmAfter) -> app::Kept + Send + Sync),
) -> Answered {
    match outcome {
        app::Outcome::Done(after) => Answered::kept(answer(&after)),
        app::Outcome::Replayed(kept) => Answered::kept(kept),
    }
}
