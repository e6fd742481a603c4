//! `POST /api/v1/vms/{id}/retry` and `/refresh`: jobs asked for by name.

use axum::extract::{Path, State};
use axum::http::StatusCode;

use super::{answered, idempotent, parse_id, vm_answer, VmOut};
use crate::answers::{Answered, IdempotencyKey};
use crate::routes::AppCaller;
use crate::{ApiError, AppState};

/// Runs the VM's failed (or cancelled) create or destroy again. A retry asked again while
/// the first waits answers with it.
#[utoipa::path(post, path = "/api/v1/vms/{id}/retry", tag = "jobs",
    security(("bearer" = [])),
    params(
        ("id" = String, Path, description = "VM id"),
        ("Idempotency-Key" = Option<String>, Header, description = "Makes a retry of the request safe (kept 24 h)"),
    ),
    responses(
        (status = 202, description = "The failed job is queued again", body = VmOut),
        (status = 404, body = crate::error::ErrorBody),
        (status = 409, description = "Nothing failed", body = crate::error::ErrorBody),
        (status = 503, description = "Nothing was changed; retry after `Retry-After` seconds", body = crate::error::ErrorBody),
    ))]
#[tracing::instrument(skip_all, fields(vm_id = %id))]
pub async fn retry_vm(
    State(state): State<AppState>,
    Path(id): Path<String>,
    AppCaller(caller): AppCaller,
    IdempotencyKey(key): IdempotencyKey,
) -> Result<Answered, ApiError> {
    let vm = parse_id(&id)?;
    let request = format!("POST /api/v1/vms/{vm}/retry");
    let answer = vm_answer(StatusCode::ACCEPTED);
    let key = idempotent(&key, &request, &answer);
    Ok(answered(
        state.app.retry_vm(&caller, vm, key).await?,
        &answer,
    ))
}

/// Reads what the cloud has of the VM (`terraform plan -refresh-only`, then `apply` of that
/// plan), after the jobs before it; a changed address is recorded, and resources changed
/// outside Terraform are shown as the VM's `drift`. The VM keeps its status while it runs.
/// A refresh asked again while one waits answers with it.
#[utoipa::path(post, path = "/api/v1/vms/{id}/refresh", tag = "jobs",
    security(("bearer" = [])),
    params(
        ("id" = String, Path, description = "VM id"),
        ("Idempotency-Key" = Option<String>, Header, description = "Makes a retry of the request safe (kept 24 h)"),
    ),
    responses(
        (status = 202, description = "Refresh queued", body = VmOut),
        (status = 404, body = crate::error::ErrorBody),
        (status = 409, description = "The VM is destroyed or to be destroyed", body = crate::error::ErrorBody),
        (status = 503, description = "Nothing was changed; retry after `Retry-After` seconds", body = crate::error::ErrorBody),
    ))]
#[tracing::instrument(skip_all, fields(vm_id = %id))]
pub async fn refresh_vm(
    State(state): State<AppState>,
    Path(id): Path<String>,
    AppCaller(caller): AppCaller,
    IdempotencyKey(key): IdempotencyKey,
) -> Result<Answered, ApiError> {
    let vm = parse_id(&id)?;
    let request = format!("POST /api/v1/vms/{vm}/refresh");
    let answer = vm_answer(StatusCode::ACCEPTED);
    let key = idempotent(&key, &request, &answer);
    Ok(answered(
        state.app.refresh_vm(&caller, vm, key).await?,
        &answer,
    ))
}
