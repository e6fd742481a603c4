//! `/api/v1/vms/{id}/jobs`: a VM's jobs, their logs, and cancelling them.

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::Json;
use domain::provisioning::{JobId, JobRecord, VmId};
use serde::Serialize;
use time::OffsetDateTime;
use utoipa::ToSchema;

use super::history::{LogOut, LogsQuery};
use super::{answered, idempotent, parse_id, vm_answer, VmOut};
use crate::answers::{Answered, IdempotencyKey};
use crate::routes::events::limit;
use crate::routes::AppCaller;
use crate::{ApiError, AppState};

/// A Terraform job of a VM.
#[derive(Debug, Serialize, ToSchema)]
pub struct JobOut {
    /// The job's number within its VM, from 1, in the order they were asked for.
    pub id: u32,
    /// `create`, `destroy` or `refresh`.
    pub action: String,
    /// `queued`, `running`, `succeeded`, `failed` or `cancelled`.
    pub state: String,
    /// Who asked for it.
    pub requested_by: Option<String>,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub queued_at: OffsetDateTime,
    /// When its runner started.
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub started_at: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub ended_at: Option<OffsetDateTime>,
    /// Terraform's exit code, when it ran to its end.
    pub exit_code: Option<i32>,
    /// Why it failed or was cancelled.
    pub reason: Option<String>,
    /// When a cancel was asked of it while it ran.
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub cancel_requested_at: Option<OffsetDateTime>,
}

impl From<&JobRecord> for JobOut {
    fn from(job: &JobRecord) -> Self {
        Self {
            id: job.id.get(),
            action: job.action.as_str().to_owned(),
            state: job.state.as_str().to_owned(),
            requested_by: job.requested_by.clone(),
            queued_at: job.queued_at,
            started_at: job.started_at,
            ended_at: job.ended_at,
            exit_code: job.exit_code,
            reason: job.reason.clone(),
            cancel_requested_at: job.cancel_requested_at,
        }
    }
}

/// The VM's jobs, in the order they were asked for (and run).
#[utoipa::path(get, path = "/api/v1/vms/{id}/jobs", tag = "jobs",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "VM id")),
    responses((status = 200, body = [JobOut]), (status = 404, body = crate::error::ErrorBody)))]
#[tracing::instrument(skip_all, fields(vm_id = %id))]
pub async fn list_vm_jobs(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<Vec<JobOut>>, ApiError> {
    let vm = parse_id(&id)?;
    let view = store::views::view(&state.app.pool, vm)
        .await?
        .ok_or_else(|| no_vm(vm))?;
    Ok(Json(view.jobs.iter().map(JobOut::from).collect()))
}

/// One job of the VM.
#[utoipa::path(get, path = "/api/v1/vms/{id}/jobs/{job}", tag = "jobs",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "VM id"), ("job" = u32, Path, description = "Job number")),
    responses((status = 200, body = JobOut), (status = 404, body = crate::error::ErrorBody)))]
#[tracing::instrument(skip_all, fields(vm_id = %id, job))]
pub async fn get_vm_job(
    State(state): State<AppState>,
    Path((id, job)): Path<(String, String)>,
) -> Result<Json<JobOut>, ApiError> {
    let (vm, job) = (parse_id(&id)?, parse_job(&job)?);
    let view = store::views::view(&state.app.pool, vm)
        .await?
        .ok_or_else(|| no_vm(vm))?;
    let record = view.job(job).ok_or_else(|| no_job(vm, job))?;
    Ok(Json(record.into()))
}

/// What Terraform printed in one job, in order; page with `after_line`.
#[utoipa::path(get, path = "/api/v1/vms/{id}/jobs/{job}/logs", tag = "jobs",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "VM id"), ("job" = u32, Path, description = "Job number"), LogsQuery),
    responses((status = 200, body = [LogOut]), (status = 404, body = crate::error::ErrorBody)))]
#[tracing::instrument(skip_all, fields(vm_id = %id, job))]
pub async fn list_vm_job_logs(
    State(state): State<AppState>,
    Path((id, job)): Path<(String, String)>,
    Query(query): Query<LogsQuery>,
) -> Result<Json<Vec<LogOut>>, ApiError> {
    let (vm, job) = (parse_id(&id)?, parse_job(&job)?);
    let view = store::views::view(&state.app.pool, vm)
        .await?
        .ok_or_else(|| no_vm(vm))?;
    view.job(job).ok_or_else(|| no_job(vm, job))?;
    let number = i32::try_from(job.get()).map_err(|_| no_job(vm, job))?;
    let after = query.after_line.unwrap_or(0);
    let rows =
        store::views::job_logs(&state.app.pool, vm, number, after, limit(query.limit)).await?;
    Ok(Json(rows.into_iter().map(LogOut::from).collect()))
}

/// Cancels a job. A queued one is cancelled at once; a running one's Terraform gets an
/// interrupt, stops after its current operations, releases the state lock, and the job
/// ends `cancelled` (or `succeeded`, if it finished meanwhile). A user cancels only the
/// destroys they asked for: one asked by an admin, the expiry sweep or the watchdog stands
/// unless an admin cancels it.
#[utoipa::path(post, path = "/api/v1/vms/{id}/jobs/{job}/cancel", tag = "jobs",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "VM id"), ("job" = u32, Path, description = "Job number")),
    responses(
        (status = 202, description = "Cancelled, or asked to stop", body = VmOut),
        (status = 403, description = "A user's cancel of a destroy another asked for (an admin, the expiry sweep, the watchdog)", body = crate::error::ErrorBody),
        (status = 404, body = crate::error::ErrorBody),
        (status = 409, description = "The job has ended", body = crate::error::ErrorBody),
        (status = 503, description = "Nothing was changed; retry after `Retry-After` seconds", body = crate::error::ErrorBody),
    ))]
#[tracing::instrument(skip_all, fields(vm_id = %id, job))]
pub async fn cancel_vm_job(
    State(state): State<AppState>,
    Path((id, job)): Path<(String, String)>,
    AppCaller(caller): AppCaller,
    IdempotencyKey(key): IdempotencyKey,
) -> Result<Answered, ApiError> {
    let job_id = parse_job(&job)?;
    let vm = parse_id(&id)?;
    let request = format!("POST /api/v1/vms/{vm}/jobs/{job_id}/cancel");
    let answer = vm_answer(StatusCode::ACCEPTED);
    let key = idempotent(&key, &request, &answer);
    let outcome = state.app.cancel_job(&caller, vm, job_id, key).await?;
    Ok(answered(outcome, &answer))
}

/// Ends a running job whose cancel did not stop it: its runner is killed (the process, or
/// the Kubernetes Job). Accepted only after a cancel and the cool-off
/// (`PROVISIONING_CANCEL_COOLOFF` seconds).
#[utoipa::path(post, path = "/api/v1/vms/{id}/jobs/{job}/force-cancel", tag = "jobs",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "VM id"), ("job" = u32, Path, description = "Job number")),
    responses(
        (status = 202, description = "The job ended cancelled; its runner is being killed", body = VmOut),
        (status = 403, description = "A user's cancel of a destroy another asked for (an admin, the expiry sweep, the watchdog)", body = crate::error::ErrorBody),
        (status = 404, body = crate::error::ErrorBody),
        (status = 409, description = "Not cancelled yet, within the cool-off, or ended", body = crate::error::ErrorBody),
        (status = 503, description = "Nothing was changed; retry after `Retry-After` seconds", body = crate::error::ErrorBody),
    ))]
#[tracing::instrument(skip_all, fields(vm_id = %id, job))]
pub async fn force_cancel_vm_job(
    State(state): State<AppState>,
    Path((id, job)): Path<(String, String)>,
    AppCaller(caller): AppCaller,
    IdempotencyKey(key): IdempotencyKey,
) -> Result<Answered, ApiError> {
    let job_id = parse_job(&job)?;
    let vm = parse_id(&id)?;
    let request = format!("POST /api/v1/vms/{vm}/jobs/{job_id}/force-cancel");
    let answer = vm_answer(StatusCode::ACCEPTED);
    let key = idempotent(&key, &request, &answer);
    let outcome = state.app.force_cancel_job(&caller, vm, job_id, key).await?;
    Ok(answered(outcome, &answer))
}

fn parse_job(job: &str) -> Result<JobId, ApiError> {
    job.parse::<u32>()
        .ok()
        .filter(|n| *n > 0)
        .map(JobId::new)
        .ok_or_else(|| ApiError::NotFound(format!("no job {job:?}: jobs are numbered from 1")))
}

fn no_vm(vm: VmId) -> ApiError {
    ApiError::NotFound(format!("no VM {vm}"))
}

fn no_job(vm: VmId, job: JobId) -> ApiError {
    ApiError::NotFound(format!("VM {vm} has no job {job}"))
}
