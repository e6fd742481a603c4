use axum::extract::{Path, State};
use axum::http::StatusCode;

use super::{answered, idempotent, parse_id, vm_answer, VmOut};
use crate::answers::{Answered, IdempotencyKey};
use crate::routes::AppCaller;
use crate::{ApiError, AppState};

/// Destroys a VM. If a job of the VM runs or waits, the destroy job runs after them; a
/// destroy asked again while one waits answers with it. Answered from the command's own
/// events, with their position in `Provisioning-Position`.
#[utoipa::path(delete, path = "/api/v1/vms/{id}", tag = "vms",
    security(("bearer" = [])),
    params(
        ("id" = String, Path, description = "VM id"),
        ("Idempotency-Key" = Option<String>, Header, description = "Makes a retry safe: the same key answers with the first answer (kept 24 h)"),
    ),
    responses(
        (status = 202, description = "Destroy requested", body = VmOut,
            headers(("Provisioning-Position" = i64, description = "Position of the command's last event; send it back as `min_position` to read your write"))),
        (status = 404, body = crate::error::ErrorBody),
        (status = 409, description = "Being destroyed, or destroyed", body = crate::error::ErrorBody),
        (status = 422, description = "The Idempotency-Key was used for another request", body = crate::error::ErrorBody),
        (status = 503, description = "The database cannot be reached, or others kept changing the VM; nothing was changed. Retry after `Retry-After` seconds", body = crate::error::ErrorBody),
    ))]
#[tracing::instrument(skip_all, fields(vm_id = %id))]
pub async fn destroy_vm(
    State(state): State<AppState>,
    Path(id): Path<String>,
    AppCaller(caller): AppCaller,
    IdempotencyKey(key): IdempotencyKey,
) -> Result<Answered, ApiError> {
    let vm = parse_id(&id)?;
    let request = format!("DELETE /api/v1/vms/{vm}");
    let answer = vm_answer(StatusCode::ACCEPTED);
    let key = idempotent(&key, &request, &answer);
    Ok(answered(
        state.app.destroy_vm(&caller, vm, key).await?,
        &answer,
    ))
}
