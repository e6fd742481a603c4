//! `POST /api/v1/vms/{id}/extend` and `PATCH /api/v1/vms/{id}`: how long a VM lives.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use utoipa::ToSchema;

use super::{answered, idempotent, parse_id, vm_answer, VmOut};
use crate::answers::{Answered, IdempotencyKey};
use crate::routes::AppCaller;
use crate::{ApiError, AppJson, AppState};

#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ExtendIn {
    /// Hours added to the VM's expiry (1 to 168); afterwards it may have at most 168 hours
    /// left.
    #[schema(minimum = 1, maximum = 168)]
    pub hours: i64,
}

/// Gives the VM more time: `hours` are added to its expiry (counted from now if it has
/// passed), as long as it then has at most a week left, and the policies would allow a
/// create of that whole life: the longest duration they give the caller (`@max_hours`,
/// `context.duration_hours`) counts from the VM's request. Past it, a 403 names the policy
/// and nothing is recorded.
#[utoipa::path(post, path = "/api/v1/vms/{id}/extend", tag = "vms",
    security(("bearer" = [])),
    request_body = ExtendIn,
    params(
        ("id" = String, Path, description = "VM id"),
        ("Idempotency-Key" = Option<String>, Header, description = "Makes a retry of the request safe (kept 24 h)"),
    ),
    responses(
        (status = 202, description = "Extended: `expires_at` is the new expiry", body = VmOut),
        (status = 403, description = "Denied by policy: the VM would live longer from its request than the caller's policies allow (`detail` names the policy)", body = crate::error::ErrorBody),
        (status = 404, body = crate::error::ErrorBody),
        (status = 409, description = "The VM is destroyed or to be destroyed", body = crate::error::ErrorBody),
        (status = 422, description = "`hours` is out of bounds, or would leave more than 168 hours", body = crate::error::ErrorBody),
        (status = 503, description = "Nothing was changed; retry after `Retry-After` seconds", body = crate::error::ErrorBody),
    ))]
#[tracing::instrument(skip_all, fields(vm_id = %id))]
pub async fn extend_vm(
    State(state): State<AppState>,
    Path(id): Path<String>,
    AppCaller(caller): AppCaller,
    IdempotencyKey(key): IdempotencyKey,
    AppJson(input): AppJson<ExtendIn>,
) -> Result<Answered, ApiError> {
    let hours = u16::try_from(input.hours).map_err(|_| ApiError::Invalid {
        field: "hours".into(),
        reason: "must be between 1 and 168".into(),
    })?;
    let vm = parse_id(&id)?;
    let request = format!("POST /api/v1/vms/{vm}/extend {hours}");
    let answer = vm_answer(StatusCode::ACCEPTED);
    let key = idempotent(&key, &request, &answer);
    let outcome = state.app.extend_vm(&caller, vm, hours, key).await?;
    Ok(answered(outcome, &answer))
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
    AppCaller(caller): AppCaller,
    IdempotencyKey(key): IdempotencyKey,
    AppJson(input): AppJson<PatchVmIn>,
) -> Result<Answered, ApiError> {
    let expires_at = input.expires_at;
    let vm = parse_id(&id)?;
    let request = format!("PATCH /api/v1/vms/{vm} {expires_at}");
    let answer = vm_answer(StatusCode::ACCEPTED);
    let key = idempotent(&key, &request, &answer);
    let outcome = state
        .app
        .set_vm_expiry(&caller, vm, expires_at, key)
        .await?;
    Ok(answered(outcome, &answer))
}
