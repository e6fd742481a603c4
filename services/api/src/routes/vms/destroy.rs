use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use domain::provisioning::{Provisioning, ProvisioningCommand};

use super::{parse_id, read_your_writes, VmOut};
use crate::error::vm_command_failed;
use crate::routes::metadata;
use crate::{ApiError, AppState, RequestId};

/// Destroys a VM. If a job of the VM is running, the destroy job runs after it.
#[utoipa::path(delete, path = "/api/v1/vms/{id}", tag = "vms",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "VM id")),
    responses(
        (status = 202, description = "Destroy requested", body = VmOut),
        (status = 404, body = crate::error::ErrorBody),
        (status = 409, description = "Already being destroyed, or destroyed", body = crate::error::ErrorBody),
    ))]
#[tracing::instrument(skip_all, fields(vm_id = %id))]
pub async fn destroy_vm(
    State(state): State<AppState>,
    Path(id): Path<String>,
    request_id: RequestId,
) -> Result<(StatusCode, Json<VmOut>), ApiError> {
    let vm = parse_id(&id)?;
    let metadata = metadata(&request_id);
    store::execute::<Provisioning>(
        &state.pool,
        vm,
        ProvisioningCommand::RequestDestroy,
        &metadata,
    )
    .await
    .map_err(|e| vm_command_failed(vm, e))?;
    let view = read_your_writes(&state, vm, &metadata).await?;
    Ok((StatusCode::ACCEPTED, Json(view)))
}
