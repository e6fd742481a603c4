use app::vms::{SshKeyChoice, VmRequest};
use axum::extract::State;
use axum::http::StatusCode;
use domain::provisioning::{DurationHours, ProviderId, SshPublicKey, TemplateId, VmId, VmName};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use super::{answered, idempotent, vm_answer, VmOut};
use crate::answers::{Answered, IdempotencyKey};
use crate::routes::AppCaller;
use crate::{ApiError, AppJson, AppState};

/// A request for a VM.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({
    "name": "web-1",
    "provider": "local",
    "template": "small",
    "ssh_public_key": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEpXvA+cP8hcraKOw+cO1rzIpAv7ms7vMYjhAKF7Qed/ me@laptop",
    "allow_ssh_from": ["192.0.2.0/24"],
    "duration_hours": 4
}))]
pub struct CreateVmIn {
    /// Optional client-chosen id (UUID). Lets a client open the VM's stream before creating
    /// it, and makes a retried create safe: the same request again answers `202` with the
    /// same VM, another request with this id `409`.
    pub id: Option<Uuid>,
    /// The VM's display name, kept as given: 1 to 63 characters of `[A-Za-z0-9._-]`. Its
    /// host name (on the cloud and on the VM) is derived from it: lower case, `.` and `_`
    /// as `-`, no `-` at either end, `vm-` in front when it does not start with a letter
    /// (`My_VM.1` → `my-vm-1`, `1st` → `vm-1st`).
    #[schema(min_length = 1, max_length = 63, pattern = r"^[A-Za-z0-9._-]+$")]
    pub name: String,
    /// A provider id from `GET /api/v1/providers`: one that exists and is available, else
    /// `422` naming `provider`.
    #[schema(min_length = 1, max_length = 64, pattern = r"^[a-z0-9._-]+$")]
    pub provider: String,
    /// A template id from `GET /api/v1/providers/{provider}/templates`: an enabled template
    /// of the provider, else `422` naming `template`.
    #[schema(min_length = 1, max_length = 64, pattern = r"^[a-z0-9._-]+$")]
    pub template: String,
    /// An OpenSSH public key, e.g. `ssh-ed25519 AAAA... me@laptop`: ed25519, ECDSA
    /// (nistp256, nistp384, nistp521) or RSA of at least 3072 bits. Give this or
    /// `ssh_key_id`, not both.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssh_public_key: Option<String>,
    /// The id of a key registered at `/api/v1/ssh-keys`, instead of `ssh_public_key`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssh_key_id: Option<String>,
    /// IPv4 networks allowed to reach the VM over SSH, at least one, e.g. `["192.0.2.0/24"]`,
    /// each no wider than the platform allows (a /16 by default; never `0.0.0.0/0`), written
    /// as a network (`192.0.2.0/24`, not `192.0.2.1/24`). `me` stands for the caller's
    /// address, as a /32. At most 32 entries; repeats count once.
    #[schema(min_items = 1, max_items = 32)]
    pub allow_ssh_from: Vec<String>,
    /// How long the VM may live: 1 to 168 hours.
    #[schema(minimum = 1, maximum = 168)]
    pub duration_hours: i64,
    /// Taskservs to install as the VM boots (`GET /api/v1/extensions/taskservs`), with
    /// their params: their requirements are added and all run in dependency order; the VM
    /// is `running` once each is over. A taskserv that cannot be installed on this template
    /// (a conflict, a missing param, its OS or size) is `422` naming it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schema(max_items = 32)]
    pub taskservs: Vec<crate::routes::taskservs::TaskservIn>,
}

/// Requests a VM. The VM is created in the background; follow it with `GET
/// /api/v1/vms/{id}` or its stream. Answered from the command's own events, with their
/// position in `Provisioning-Position`.
///
/// Safe to retry: the same request with the same `id` answers `202` with the same VM (the
/// same `id` with another request: `409`), and so does the same request with the same
/// `Idempotency-Key` (another request with that key: `422`).
#[utoipa::path(post, path = "/api/v1/vms", tag = "vms",
    security(("bearer" = [])),
    request_body = CreateVmIn,
    params(("Idempotency-Key" = Option<String>, Header, description = "Makes a retry safe: the same key answers with the first answer (kept 24 h)")),
    responses(
        (status = 202, description = "Requested", body = VmOut,
            headers(("Provisioning-Position" = i64, description = "Position of the command's last event; send it back as `min_position` to read your write"))),
        (status = 400, description = "Malformed JSON", body = crate::error::ErrorBody),
        (status = 403, description = "Denied by a policy (who may use the template, or a limit): `detail` names the policy; nothing was recorded", body = crate::error::ErrorBody),
        (status = 409, description = "A VM with this id exists, requested differently", body = crate::error::ErrorBody),
        (status = 413, description = "The body is larger than 256 KiB, or the VM's job message would be larger than a NATS message may be; nothing was recorded", body = crate::error::ErrorBody),
        (status = 422, description = "A field is invalid (`detail` names it), or the Idempotency-Key was used for another request", body = crate::error::ErrorBody),
        (status = 503, description = "The database cannot be reached; nothing was changed. Retry after `Retry-After` seconds", body = crate::error::ErrorBody),
    ))]
#[tracing::instrument(skip_all)]
pub async fn create_vm(
    State(state): State<AppState>,
    AppCaller(caller): AppCaller,
    IdempotencyKey(key): IdempotencyKey,
    AppJson(input): AppJson<CreateVmIn>,
) -> Result<Answered, ApiError> {
    // With the caller: one user's key never answers another's request.
    let request = format!(
        "POST /api/v1/vms {} by {}",
        serde_json::to_string(&input).expect("a request is plain data"),
        caller.principal.user
    );
    let answer = vm_answer(StatusCode::ACCEPTED);
    let key = idempotent(&key, &request, &answer);
    let outcome = state.app.request_vm(&caller, parse(input)?, key).await?;
    Ok(answered(outcome, &answer))
}

/// The request's values, parsed; the application layer checks them against the catalog,
/// the caller's keys, the network rules and the policies.
fn parse(input: CreateVmIn) -> Result<VmRequest, ApiError> {
    let name = VmName::parse(&input.name)?;
    let provider = ProviderId::parse(&input.provider)?;
    let template = TemplateId::parse(&input.template)?;
    let ssh_key = ssh_key_choice(input.ssh_public_key, input.ssh_key_id)?;
    Ok(VmRequest {
        id: input.id.map(VmId::from),
        name,
        provider,
        template,
        ssh_key,
        allow_ssh_from: input.allow_ssh_from,
        duration: DurationHours::parse(input.duration_hours)?,
        taskservs: crate::routes::taskservs::parse_requests(input.taskservs)?,
        cluster: None,
    })
}

/// The key a request gives: `ssh_public_key` or `ssh_key_id`, exactly one.
pub(crate) fn ssh_key_choice(
    ssh_public_key: Option<String>,
    ssh_key_id: Option<String>,
) -> Result<SshKeyChoice, ApiError> {
    let invalid = |reason: &str| ApiError::Invalid {
        field: "ssh_public_key".into(),
        reason: reason.into(),
    };
    match (ssh_public_key, ssh_key_id) {
        (Some(key), None) => Ok(SshKeyChoice::Key(SshPublicKey::parse(&key)?)),
        (None, Some(id)) => Ok(SshKeyChoice::Registered(id)),
        (Some(_), Some(_)) => Err(invalid(
            "give either ssh_public_key or ssh_key_id, not both",
        )),
        (None, None) => Err(invalid(
            "missing: give ssh_public_key, or ssh_key_id to use a registered key",
        )),
    }
}
