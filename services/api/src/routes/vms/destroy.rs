use axum::extract::{Path, State};
use domain::provisioning::ProvisioningCommand;

use super::{answered_meanwhile, parse_id, run, VmOut};
use crate::answers::{kept_answer, Answered, IdempotencyKey};
use crate::error::vm_command_failed;
use crate::routes::metadata;
use crate::{ApiError, AppState, RequestId};

/// Destroys a VM. If a job of the VM is running, the destroy job runs after it. Answered
/// from the command's own events, with their position in `Provisioning-Position`.
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
        (status = 409, description = "Already being destroyed, or destroyed", body = crate::error::ErrorBody),
        (status = 422, description = "The Idempotency-Key was used for another request", body = crate::error::ErrorBody),
        (status = 503, description = "The database cannot be reached, or others kept changing the VM; nothing was changed. Retry after `Retry-After` seconds", body = crate::error::ErrorBody),
    ))]
#[tracing::instrument(skip_all, fields(vm_id = %id))]
pub async fn destroy_vm(
    State(state): State<AppState>,
    Path(id): Path<String>,
    request_id: RequestId,
    IdempotencyKey(key): IdempotencyKey,
) -> Result<Answered, ApiError> {
    let vm = parse_id(&id)?;
    let fingerprint = format!("DELETE /api/v1/vms/{vm}");
    if let Some(key) = &key {
        if let Some(kept) = kept_answer(&state, key, &fingerprint).await? {
            return Ok(kept);
        }
    }
    // When the VM was requested: the answer shows it, as the read model does.
    let first = store::projected::requested(&state.pool, vm)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no VM {vm}")))?;
    let key = key.as_deref().map(|k| (k, fingerprint.as_str()));
    let command = ProvisioningCommand::RequestDestroy;
    let metadata = metadata(&request_id);
    match run(&state, vm, command, &metadata, key, Some(first.first_at)).await {
        Ok(Some(answer)) => Ok(answer),
        Ok(None) => answered_meanwhile(&state, key).await,
        Err(e) => Err(vm_command_failed(vm, e)),
    }
}
