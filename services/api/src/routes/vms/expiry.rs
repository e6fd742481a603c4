//! `POST /api/v1/vms/{id}/extend` and `PATCH /api/v1/vms/{id}`: how long a VM lives.

use axum::extract::{Path, State};
use domain::provisioning::{expiry, ExtendLimit, ProvisioningCommand, VmId};
use serde::{Deserialize, Serialize};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;
use utoipa::ToSchema;

use super::{command_vm, parse_id, VmOut};
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
    principal: Principal,
    request_id: RequestId,
    IdempotencyKey(key): IdempotencyKey,
    AppJson(input): AppJson<ExtendIn>,
) -> Result<Answered, ApiError> {
    let hours = u16::try_from(input.hours).map_err(|_| ApiError::Invalid {
        field: "hours".into(),
        reason: "must be between 1 and 168".into(),
    })?;
    let at = OffsetDateTime::now_utc();
    let limit = match parse_id(&id) {
        Ok(vm) => lifetime_limit(&state, &principal, vm, hours, at).await?,
        Err(_) => None, // answered as a missing VM by the command
    };
    let policy = limit.as_ref().map(|l| l.policy.clone());
    let what = move |vm| format!("POST /api/v1/vms/{vm}/extend {hours}");
    let command = ProvisioningCommand::Extend { hours, at, limit };
    let answer = command_vm(&state, &principal, &id, what, command, &request_id, key).await;
    if let (Err(ApiError::Forbidden(detail)), Some(policy)) = (&answer, policy) {
        crate::policy::denied_lifetime(&state, &principal, &policy, detail);
    }
    answer
}

/// What the VM's request recorded: when it was asked, and its provider and template.
struct Asked {
    at: OffsetDateTime,
    provider: String,
    template: String,
}

/// The VM's request, from its `Requested` event (extensions leave it as it was): asked at
/// its first expiry less the hours asked, or at its recording for an event without one.
async fn asked(state: &AppState, vm: VmId) -> Result<Option<Asked>, ApiError> {
    let first = store::vm_events(&state.pool, vm, 0, 1).await?;
    let Some(event) = first.into_iter().next() else {
        return Ok(None);
    };
    let text = |pointer: &str| event.data.pointer(pointer).and_then(|v| v.as_str());
    let hours = event
        .data
        .pointer("/spec/duration_hours")
        .and_then(|v| v.as_i64());
    let expires_at = text("/expires_at").and_then(|t| OffsetDateTime::parse(t, &Rfc3339).ok());
    let at = match (expires_at, hours) {
        (Some(expires_at), Some(hours)) => expires_at - time::Duration::hours(hours),
        _ => event.recorded_at,
    };
    Ok(Some(Asked {
        at,
        provider: text("/spec/provider").unwrap_or_default().to_owned(),
        template: text("/spec/template").unwrap_or_default().to_owned(),
    }))
}

/// The latest the caller's policies let `vm` live (their longest duration counted from
/// its request), for the aggregate to hold the extension to; a 403 now when the policies
/// refuse its template for a life that long. Extensions the aggregate refuses anyway (out of
/// bounds, a VM to be destroyed) are left to it, so that they are answered as before.
async fn lifetime_limit(
    state: &AppState,
    principal: &Principal,
    vm: VmId,
    hours: u16,
    at: OffsetDateTime,
) -> Result<Option<ExtendLimit>, ApiError> {
    let (Some(asked), Some(row)) = (
        asked(state, vm).await?,
        store::views::get(&state.pool, vm).await?,
    ) else {
        return Ok(None); // no such VM: the command answers it
    };
    let max = state.policies.book().limits(principal).max_hours;
    let limit = ExtendLimit {
        until: asked.at + time::Duration::hours(max.value.min(i32::MAX as u64) as i64),
        hours: max.value,
        policy: max.policy,
    };
    let from = row.expires_at.map_or(at, |e| e.max(at));
    let until = from + time::Duration::hours(hours.into());
    let in_bounds = (1..=168).contains(&hours) && until - at <= expiry::LONGEST;
    let ending = ["destroy_requested", "destroying", "destroyed"].contains(&row.status.as_str());
    if in_bounds && !ending {
        // Whole hours, rounded up: a create asks for whole hours too.
        let life = ((until - asked.at).whole_seconds().max(0) as u64).div_ceil(3600);
        crate::policy::admit_lifetime(state, principal, &asked.provider, &asked.template, life)
            .await?;
    }
    Ok(Some(limit))
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
