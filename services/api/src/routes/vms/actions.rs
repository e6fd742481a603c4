//! `POST /api/v1/vms/{id}/retry` and `/refresh`: jobs asked for by name.

use axum::extract::{Path, State};
use domain::provisioning::ProvisioningCommand;

use super::{command_vm, VmOut};
use crate::answers::{Answered, IdempotencyKey};
use crate::auth::Principal;
use crate::{ApiError, AppState, RequestId};

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
    principal: Principal,
    request_id: RequestId,
    IdempotencyKey(key): IdempotencyKey,
) -> Result<Answered, ApiError> {
    let what = |vm| format!("POST /api/v1/vms/{vm}/retry");
    command_vm(
        &state,
        &principal,
        &id,
        what,
        ProvisioningCommand::Retry,
        &request_id,
        key,
    )
    .await
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
    principal: Principal,
    request_id: RequestId,
    IdempotencyKey(key): IdempotencyKey,
) -> Result<Answered, ApiError> {
    let what = |vm| format!("POST /api/v1/vms/{vm}/refresh");
    command_vm(
        &state,
        &principal,
        &id,
        what,
        ProvisioningCommand::Refresh,
        &request_id,
        key,
    )
    .await
}
