//! `POST /api/v1/vms/{id}/extend` and `PATCH /api/v1/vms/{id}`: how long a VM lives.

use axum::extract::{Path, State};
use domain::provisioning::ProvisioningCommand;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use utoipa::ToSchema;

use super::{command_vm, VmOut};
use crate::answers::{Answered, IdempotencyKey};
use crate::auth::Principal;
use crate::{ApiError, AppJson, AppState, RequestId};

#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ExtendIn {
    /// Hours added to the VM's expiry (1 to 168); afterwards it may have at most 168 hours
    /// left.
    #[schema(minimum = 1, maximum = 168)]
    pub hours: i64,
}

/// Gives the VM more time: `hours` are added to its expiry (counted from now if it has
/// passed), as long as it then has at most a week left.
#[utoipa::path(post, path = "/api/v1/vms/{id}/extend", tag = "vms",
    security(("bearer" = [])),
    request_body = ExtendIn,
    params(
        ("id" = String, Path, description = "VM id"),
        ("Idempotency-Key" = Option<String>, Header, description = "Makes a retry of the request safe (kept 24 h)"),
    ),
    responses(
        (status = 202, description = "Extended: `expires_at` is the new expiry", body = VmOut),
        (status = 404, body = crate::error::ErrorBody),
        (status = 409, description = "The VM is destroyed or to be destroyed", body = crate::error::ErrorBody),
        (status = 422, description = "`hours` is out of bounds, or would leave more than 168 hours", body = crate::error::ErrorBody),
        (status = 503, description = "Nothing was changed; retry after `Retry-After` seconds", body = crate::error::ErrorBody),
    ))]
#[tracing::instrument(skip_all, fields(vm_id = %id))]
pub async fn extend_vm(
    State(state): State<AppState>,
    Path(id): Path<String>,
    principal: Principal,
    request_id: RequestId,
    IdempotencyKey(key): IdempotencyKey,
    AppJson(input): AppJson<ExtendIn>,
) -> Result<Answered, ApiError> {
    let hours = u16::try_from(input.hours).map_err(|_| ApiError::Invalid {
        field: "hours".into(),
        reason: "must be between 1 and 168".into(),
    })?;
    let what = move |vm| format!("POST /api/v1/vms/{vm}/extend {hours}");
    let command = ProvisioningCommand::Extend {
        hours,
        at: OffsetDateTime::now_utc(),
    };
    command_vm(&state, &principal, &id, what, command, &request_id, key).await
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PatchVmIn {
    /// When the VM expires (RFC 3339), earlier or later than now: in the future, within
    /// 366 days.
    #[serde(
        deserialize_with = "crate::timestamps::required",
        serialize_with = "time::serde::rfc3339::serialize"
    )]
    #[schema(value_type = crate::routes::schemas::Time)]
    pub expires_at: OffsetDateTime,
}

/// Sets when the VM expires (admins): the expiry sweep destroys it once that time passed.
#[utoipa::path(patch, path = "/api/v1/vms/{id}", tag = "vms",
    security(("bearer" = [])),
    request_body = PatchVmIn,
    params(
        ("id" = String, Path, description = "VM id"),
        ("Idempotency-Key" = Option<String>, Header, description = "Makes a retry of the request safe (kept 24 h)"),
    ),
    responses(
        (status = 202, description = "Set", body = VmOut),
        (status = 403, description = "The caller is not an admin (users extend their VMs with `POST .../extend`)", body = crate::error::ErrorBody),
        (status = 404, body = crate::error::ErrorBody),
        (status = 409, description = "The VM is destroyed or to be destroyed", body = crate::error::ErrorBody),
        (status = 422, description = "`expires_at` is not an RFC 3339 time in the next 366 days", body = crate::error::ErrorBody),
        (status = 503, description = "Nothing was changed; retry after `Retry-After` seconds", body = crate::error::ErrorBody),
    ))]
#[tracing::instrument(skip_all, fields(vm_id = %id))]
pub async fn patch_vm(
    State(state): State<AppState>,
    Path(id): Path<String>,
    principal: Principal,
    request_id: RequestId,
    IdempotencyKey(key): IdempotencyKey,
    AppJson(input): AppJson<PatchVmIn>,
) -> Result<Answered, ApiError> {
    if !principal.is_admin() {
        return Err(ApiError::Forbidden(
            "only admins may set a VM's expiry; extend it with POST /api/v1/vms/{id}/extend".into(),
        ));
    }
    let expires_at = input.expires_at;
    let what = move |vm| format!("PATCH /api/v1/vms/{vm} {expires_at}");
    let command = ProvisioningCommand::SetExpiry {
        expires_at,
        at: OffsetDateTime::now_utc(),
    };
    command_vm(&state, &principal, &id, what, command, &request_id, key).await
}
