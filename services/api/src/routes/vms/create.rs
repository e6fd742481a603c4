use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use domain::provisioning::{
    Cidr, DurationHours, ProviderId, Provisioning, ProvisioningCommand, SshPublicKey, TemplateId,
    VmId, VmName, VmSpec,
};
use serde::Deserialize;
use utoipa::ToSchema;
use uuid::Uuid;

use super::{read_your_writes, VmOut};
use crate::error::vm_command_failed;
use crate::routes::metadata;
use crate::{ApiError, AppJson, AppState, RequestId};

/// A request for a VM.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateVmIn {
    /// Optional client-chosen id (UUID). Lets a client open the VM's stream before creating
    /// it, and makes a retried create safe: the second one gets `409`.
    pub id: Option<Uuid>,
    /// 1 to 63 characters of `[a-z0-9-]`, starting with a letter.
    pub name: String,
    /// A provider id from `GET /api/v1/providers`.
    pub provider: String,
    /// A template id from `GET /api/v1/providers/{provider}/templates`.
    pub template: String,
    /// An OpenSSH public key, e.g. `ssh-ed25519 AAAA... me@laptop`.
    pub ssh_public_key: String,
    /// IPv4 networks allowed to reach the VM over SSH, at least one, e.g. `["192.0.2.0/24"]`.
    pub allow_ssh_from: Vec<String>,
    /// How long the VM may live: 1 to 168 hours.
    pub duration_hours: i64,
}

/// Requests a VM. The VM is created in the background; follow it with `GET
/// /api/v1/vms/{id}` or its stream.
#[utoipa::path(post, path = "/api/v1/vms", tag = "vms",
    security(("bearer" = [])),
    request_body = CreateVmIn,
    responses(
        (status = 202, description = "Requested", body = VmOut),
        (status = 400, description = "Malformed JSON", body = crate::error::ErrorBody),
        (status = 409, description = "A VM with this id exists", body = crate::error::ErrorBody),
        (status = 422, description = "A field is invalid; `detail` names it", body = crate::error::ErrorBody),
    ))]
#[tracing::instrument(skip_all, fields(vm_id))]
pub async fn create_vm(
    State(state): State<AppState>,
    request_id: RequestId,
    AppJson(input): AppJson<CreateVmIn>,
) -> Result<(StatusCode, Json<VmOut>), ApiError> {
    let spec = validate(&state, &input).await?;
    let vm = input.id.map(VmId::from).unwrap_or_default();
    tracing::Span::current().record("vm_id", tracing::field::display(vm));
    let metadata = metadata(&request_id);
    store::execute::<Provisioning>(
        &state.pool,
        vm,
        ProvisioningCommand::Request { spec },
        &metadata,
    )
    .await
    .map_err(|e| vm_command_failed(vm, e))?;
    let view = read_your_writes(&state, vm, &metadata).await?;
    Ok((StatusCode::ACCEPTED, Json(view)))
}

/// Checks every field, the catalog included; returns the first problem, naming its field.
async fn validate(state: &AppState, input: &CreateVmIn) -> Result<VmSpec, ApiError> {
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
    let ssh_public_key = SshPublicKey::parse(&input.ssh_public_key)?;
    if input.allow_ssh_from.is_empty() {
        return Err(invalid(
            "allow_ssh_from",
            "must name at least one network".into(),
        ));
    }
    let allow_ssh_from = input
        .allow_ssh_from
        .iter()
        .map(|c| Cidr::parse(c))
        .collect::<Result<Vec<_>, _>>()?;
    let duration_hours = DurationHours::parse(input.duration_hours)?;
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
    })
}
