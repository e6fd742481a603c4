use axum::extract::State;
use axum::http::StatusCode;
use domain::provisioning::{
    DurationHours, ProviderId, Provisioning, ProvisioningCommand, ProvisioningError, SshPublicKey,
    Stamp, TemplateId, VmId, VmName, VmSpec, VmView,
};
use domain::Decide;
use serde::{Deserialize, Serialize};
use store::CommandError;
use utoipa::ToSchema;
use uuid::Uuid;

use super::{answered_meanwhile, run, vm_out, VmOut};
use crate::answers::{kept_answer, Answered, IdempotencyKey};
use crate::auth::Principal;
use crate::error::vm_command_failed;
use crate::network::{allowed_networks, ClientAddr};
use crate::routes::metadata;
use crate::routes::ssh_keys::registered_key;
use crate::{ApiError, AppJson, AppState, RequestId};

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
#[tracing::instrument(skip_all, fields(vm_id))]
pub async fn create_vm(
    State(state): State<AppState>,
    owner: Principal,
    caller: ClientAddr,
    request_id: RequestId,
    IdempotencyKey(key): IdempotencyKey,
    AppJson(input): AppJson<CreateVmIn>,
) -> Result<Answered, ApiError> {
    // With the caller: one user's key never answers another's request.
    let fingerprint = format!(
        "POST /api/v1/vms {} by {}",
        serde_json::to_string(&input).expect("a request is plain data"),
        owner.user
    );
    if let Some(key) = &key {
        if let Some(kept) = kept_answer(&state, key, &fingerprint).await? {
            return Ok(kept);
        }
    }
    let spec = validate(&state, &input, &owner, &caller).await?;
    let vm = input.id.map(VmId::from).unwrap_or_default();
    tracing::Span::current().record("vm_id", tracing::field::display(vm));
    super::message_size::check(vm, &spec, request_id.as_str(), state.bus.payload_limit())?;
    let key = key.as_deref().map(|k| (k, fingerprint.as_str()));
    let command = ProvisioningCommand::Request {
        spec: spec.clone(),
        at: time::OffsetDateTime::now_utc(),
    };
    let metadata = metadata(&owner, &request_id);
    match run(
        &state,
        vm,
        command,
        &metadata,
        key,
        None,
        StatusCode::ACCEPTED,
    )
    .await
    {
        Ok(Some(answer)) => Ok(answer),
        Ok(None) => answered_meanwhile(&state, key).await,
        Err(CommandError::Rejected(ProvisioningError::AlreadyRequested)) => {
            requested_before(&state, vm, &spec).await
        }
        Err(e) => Err(vm_command_failed(vm, e)),
    }
}

/// A create with the `id` of an existing VM: the first create's answer again if it asked
/// for the same, a 409 if not.
async fn requested_before(state: &AppState, vm: VmId, spec: &VmSpec) -> Result<Answered, ApiError> {
    let exists = || ApiError::Conflict(format!("a VM with id {vm} exists already"));
    let (current, _) = store::load::<Provisioning>(&state.pool, &vm.to_string())
        .await
        .map_err(|e| match e {
            store::StoreError::Database(e) => e.into(),
            e => ApiError::internal(e),
        })?;
    let first = current.spec().ok_or_else(exists)?;
    if !same_request(first, spec) {
        return Err(ApiError::Conflict(format!(
            "a VM with id {vm} exists already, requested with other values"
        )));
    }
    let requested = store::projected::requested(&state.pool, vm)
        .await?
        .ok_or_else(exists)?;
    // The VM as its create left it: the answer the first request got.
    let events = Provisioning::default()
        .decide(
            ProvisioningCommand::Request {
                spec: first.clone(),
                at: first_request_time(state, vm, first).await?,
            },
            &(),
        )
        .map_err(ApiError::internal)?;
    let mut view = VmView::default();
    let stamp = Stamp {
        at: requested.first_at,
        actor: None,
    };
    for (sequence, event) in (1..).zip(&events) {
        view.update(sequence, stamp, event);
    }
    let body = vm_out(
        vm,
        first,
        &view.lifecycle,
        requested.first_at,
        requested.last_at,
    );
    Ok(Answered::new(
        StatusCode::ACCEPTED,
        &body,
        Some(requested.last_position),
    ))
}

/// The time the first create of `vm` was asked at, from its recorded expiry (extensions
/// since leave the `Requested` event as it was), so its answer can be given again as it was.
async fn first_request_time(
    state: &AppState,
    vm: VmId,
    spec: &VmSpec,
) -> Result<time::OffsetDateTime, ApiError> {
    let first = store::vm_events(&state.pool, vm, 0, 1).await?;
    let expires_at = first
        .first()
        .and_then(|e| e.data.get("expires_at")?.as_str().map(str::to_owned))
        .and_then(|s| {
            time::OffsetDateTime::parse(&s, &time::format_description::well_known::Rfc3339).ok()
        });
    let lives = time::Duration::hours(spec.duration_hours.get().into());
    let requested = first.first().map(|e| e.recorded_at);
    expires_at
        .map(|e| e - lives)
        .or(requested)
        .ok_or_else(|| ApiError::NotFound(format!("no VM {vm}")))
}

/// Whether two requests asked for the same VM: the fields a client sends. (The template's
/// image and flavor may have changed in the catalog since.)
fn same_request(a: &VmSpec, b: &VmSpec) -> bool {
    a.name == b.name
        && a.provider == b.provider
        && a.template == b.template
        && a.ssh_public_key == b.ssh_public_key
        && a.allow_ssh_from == b.allow_ssh_from
        && a.duration_hours == b.duration_hours
        // Another user's VM with this id is not theirs to read back.
        && a.owner == b.owner
}

/// Checks every field, the catalog included; returns the first problem, naming its field.
async fn validate(
    state: &AppState,
    input: &CreateVmIn,
    owner: &Principal,
    caller: &ClientAddr,
) -> Result<VmSpec, ApiError> {
    let invalid = |field: &str, reason: String| ApiError::Invalid {
        field: field.into(),
        reason,
    };
    let name = VmName::parse(&input.name)?;
    let provider = ProviderId::parse(&input.provider)?;
    if store::catalog::provider(&state.pool, &provider)
        .await?
        .is_none()
    {
        return Err(invalid(
            "provider",
            format!("{:?} does not exist", input.provider),
        ));
    }
    if !crate::routes::providers::available(state, &provider).await? {
        return Err(invalid(
            "provider",
            format!("{:?} is disabled or lacks credentials", input.provider),
        ));
    }
    let template = TemplateId::parse(&input.template)?;
    let row = store::catalog::template(&state.pool, &provider, &template)
        .await?
        .filter(|t| t.enabled)
        .ok_or_else(|| {
            invalid(
                "template",
                format!(
                    "{:?} is not an enabled template of {:?}",
                    input.template, input.provider
                ),
            )
        })?;
    let ssh_public_key = match (&input.ssh_public_key, &input.ssh_key_id) {
        (Some(key), None) => SshPublicKey::parse(key)?,
        (None, Some(id)) => registered_key(state, owner, id).await?,
        (Some(_), Some(_)) => {
            return Err(invalid(
                "ssh_public_key",
                "give either ssh_public_key or ssh_key_id, not both".into(),
            ))
        }
        (None, None) => {
            return Err(invalid(
                "ssh_public_key",
                "missing: give ssh_public_key, or ssh_key_id to use a registered key".into(),
            ))
        }
    };
    let allow_ssh_from = allowed_networks(&state.network, &input.allow_ssh_from, caller)?;
    // Last, once the request is valid: a refusal names the policy and records nothing.
    let duration_hours = DurationHours::parse(input.duration_hours)?;
    crate::policy::admit(state, owner, &row, duration_hours.get().into()).await?;
    Ok(VmSpec {
        name,
        provider,
        template,
        image_name: row.image_name,
        flavor_name: row.flavor_name,
        ssh_public_key,
        allow_ssh_from,
        duration_hours,
        username: row.username,
        owner: owner.user,
    })
}
