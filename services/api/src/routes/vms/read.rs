use axum::extract::{Path, State};
use axum::Json;

use super::{parse_id, VmOut};
use crate::{ApiError, AppState};

/// The VMs, newest first (at most 1000).
#[utoipa::path(get, path = "/api/v1/vms", tag = "vms",
    security(("bearer" = [])),
    responses((status = 200, body = [VmOut]), (status = 401, body = crate::error::ErrorBody)))]
pub async fn list_vms(State(state): State<AppState>) -> Result<Json<Vec<VmOut>>, ApiError> {
    let rows = store::views::list(&state.pool, 1000).await?;
    Ok(Json(rows.into_iter().map(VmOut::from).collect()))
}

/// One VM.
#[utoipa::path(get, path = "/api/v1/vms/{id}", tag = "vms",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "VM id")),
    responses((status = 200, body = VmOut), (status = 404, body = crate::error::ErrorBody)))]
#[tracing::instrument(skip_all, fields(vm_id = %id))]
pub async fn get_vm(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<VmOut>, ApiError> {
    let vm = parse_id(&id)?;
    let row = store::views::get(&state.pool, vm)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no VM {vm}")))?;
    Ok(Json(row.into()))
}
