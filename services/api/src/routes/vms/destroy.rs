use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::Json;
use domain::provisioning::{Provisioning, ProvisioningCommand, ProvisioningError};

use super::{parse_id, read_your_writes, VmOut};
use crate::routes::metadata;
use crate::{ApiError, AppState};

/// Destroys a VM. If a job of the VM is running, the destroy job runs after it.
#[utoipa::path(delete, path = "/api/v1/vms/{id}", tag = "vms",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "VM id")),
    responses(
        (status = 202, description = "Destroy requested", body = VmOut),
        (status = 404, body = crate::error::ErrorBody),
        (status = 409, description = "Already being destroyed, or destroyed", body = crate::error::ErrorBody),
    ))]
pub async fn destroy_vm(
    State(state): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<(StatusCode, Json<VmOut>), ApiError> {
    let vm = parse_id(&id)?;
    let metadata = metadata(&headers);
    store::execute::<Provisioning>(
        &state.pool,
        vm,
        ProvisioningCommand::RequestDestroy,
        &metadata,
    )
    .await
    .map_err(|e| match e {
        store::CommandError::Rejected(ProvisioningError::NotFound) => {
            ApiError::NotFound(format!("no VM {vm}"))
        }
        store::CommandError::Rejected(e) => ApiError::Conflict(e.to_string()),
        other => ApiError::internal(other),
    })?;
    let view = read_your_writes(&state, vm, &metadata).await?;
    Ok((StatusCode::ACCEPTED, Json(view)))
}
