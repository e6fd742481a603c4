//! `POST /api/v1/vms/{id}/archive`: a destroyed VM leaves the default list.

use axum::extract::{Path, State};
use axum::http::StatusCode;

use super::{answered, idempotent, parse_id, vm_answer, VmOut};
use crate::answers::{Answered, IdempotencyKey};
use crate::routes::AppCaller;
use crate::{ApiError, AppState};

/// Archives a destroyed VM: `GET /api/v1/vms` leaves it out unless asked for archived VMs.
/// Its history (events, jobs, logs) stays. Archiving it again answers the VM as it is and
/// records nothing.
#[utoipa::path(post, path = "/api/v1/vms/{id}/archive", tag = "vms",
    security(("bearer" = [])),
    params(
        ("id" = String, Path, description = "VM id"),
        ("Idempotency-Key" = Option<String>, Header, description = "Makes a retry of the request safe (kept 24 h)"),
    ),
    responses(
        (status = 200, description = "Archived (now or before)", body = VmOut),
        (status = 404, body = crate::error::ErrorBody),
        (status = 409, description = "The VM is not destroyed", body = crate::error::ErrorBody),
        (status = 503, description = "Nothing was changed; retry after `Retry-After` seconds", body = crate::error::ErrorBody),
    ))]
#[tracing::instrument(skip_all, fields(vm_id = %id))]
pub async fn archive_vm(
    State(state): State<AppState>,
    Path(id): Path<String>,
    AppCaller(caller): AppCaller,
    IdempotencyKey(key): IdempotencyKey,
) -> Result<Answered, ApiError> {
    let vm = parse_id(&id)?;
    let request = format!("POST /api/v1/vms/{vm}/archive");
    let answer = vm_answer(StatusCode::OK);
    let key = idempotent(&key, &request, &answer);
    Ok(answered(
        state.app.archive_vm(&caller, vm, key).await?,
        &answer,
    ))
}
