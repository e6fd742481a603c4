//! NAIC's writes, as thin adapters over the use cases `/api/v1` runs: the same validation,
//! policies, events, audit actor and correlation id. Each answers once the read models show
//! its change (bounded), so the frontend's next list or detail read shows it.

use axum::body::to_bytes;
use axum::extract::{Path, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};

use super::catalog::success;
use super::shapes::parse_template_id;
use crate::answers::{Answered, IdempotencyKey};
use crate::auth::Principal;
use crate::network::ClientAddr;
use crate::routes::ssh_keys::GenerateSshKeyIn;
use crate::routes::vms::CreateVmIn;
use crate::{ApiError, AppJson, AppState, RequestId};

/// What NAIC's Create page sends.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateIn {
    pub vm_name: String,
    pub ssh_key_id: String,
    /// `<provider>:<template>`, as `GET /api/vm/templates` names it.
    pub vm_template_id: String,
    /// Hours.
    pub duration: i64,
    pub ip_ranges: Vec<String>,
}

/// Our field names in an error, as the NAIC request names them (the frontend shows the
/// message).
fn naic_field(field: &str) -> String {
    let (head, rest) = field
        .find('[')
        .map_or((field, ""), |at| (&field[..at], &field[at..]));
    let name = match head {
        "name" => "vmName",
        "ssh_key_id" | "ssh_public_key" => "sshKeyId",
        "provider" | "template" => "vmTemplateId",
        "duration_hours" => "duration",
        "allow_ssh_from" => "ipRanges",
        other => other,
    };
    format!("{name}{rest}")
}

fn in_naic_terms(e: ApiError) -> ApiError {
    match e {
        ApiError::Invalid { field, reason } => ApiError::Invalid {
            field: naic_field(&field),
            reason,
        },
        e => e,
    }
}

/// Waits (bounded) until the read models show the command's events; the command is
/// committed either way, so a wait that runs out still answers success.
async fn settle(state: &AppState, answered: &Answered) {
    if let Some(position) = answered.position {
        if let Err(e) = crate::answers::wait_until_projected(state, position).await {
            tracing::info!(error = %e, "answering before the read models show the change");
        }
    }
}

/// Requests a VM; the new VM's id as a bare JSON string, as NAIC answers.
pub async fn create_vm(
    State(state): State<AppState>,
    principal: Principal,
    caller: ClientAddr,
    request_id: RequestId,
    AppJson(input): AppJson<CreateIn>,
) -> Result<Json<Value>, ApiError> {
    let (provider, template) =
        parse_template_id(&input.vm_template_id).ok_or_else(|| ApiError::Invalid {
            field: "vmTemplateId".into(),
            reason: format!(
                "{:?} is not a template id from /api/vm/templates",
                input.vm_template_id
            ),
        })?;
    let request = CreateVmIn {
        id: None,
        name: input.vm_name,
        provider: provider.to_owned(),
        template: template.to_owned(),
        ssh_public_key: None,
        ssh_key_id: Some(input.ssh_key_id),
        allow_ssh_from: input.ip_ranges,
        duration_hours: input.duration,
    };
    let answered = crate::routes::vms::create_vm(
        State(state.clone()),
        principal,
        caller,
        request_id,
        IdempotencyKey(None),
        AppJson(request),
    )
    .await
    .map_err(in_naic_terms)?;
    settle(&state, &answered).await;
    let id = answered
        .body
        .get("id")
        .cloned()
        .ok_or_else(|| ApiError::internal("a create answered without the VM's id"))?;
    Ok(Json(id))
}

/// The VM `id` if the caller may see it; 404 otherwise (another user's VM too).
async fn visible(state: &AppState, principal: &Principal, id: &str) -> Result<(), ApiError> {
    let vm = id
        .parse()
        .map_err(|_| ApiError::NotFound(format!("no VM {id:?}")))?;
    crate::routes::vms::visible(state, principal, vm).await
}

/// Requests the VM's destroy.
pub async fn destroy_vm(
    State(state): State<AppState>,
    Path(id): Path<String>,
    principal: Principal,
    request_id: RequestId,
) -> Result<Json<Value>, ApiError> {
    visible(&state, &principal, &id).await?;
    let answered = crate::routes::vms::destroy_vm(
        State(state.clone()),
        Path(id),
        principal,
        request_id,
        IdempotencyKey(None),
    )
    .await?;
    settle(&state, &answered).await;
    Ok(success())
}

/// Archives a destroyed VM (it stays in `GET /api/vm`, marked `metadata.archived`).
pub async fn archive_vm(
    State(state): State<AppState>,
    Path(id): Path<String>,
    principal: Principal,
    request_id: RequestId,
) -> Result<Json<Value>, ApiError> {
    visible(&state, &principal, &id).await?;
    let answered = crate::routes::vms::archive_vm(
        State(state.clone()),
        Path(id),
        principal,
        request_id,
        IdempotencyKey(None),
    )
    .await?;
    settle(&state, &answered).await;
    Ok(success())
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KeyIn {
    pub key_name: String,
}

/// Makes a key pair and registers its public key: `{keyId, privateKey}`, the private key
/// in this answer only (never stored nor logged), as `/api/v1/ssh-keys/generate` does.
pub async fn create_key(
    State(state): State<AppState>,
    principal: Principal,
    AppJson(input): AppJson<KeyIn>,
) -> Result<Response, ApiError> {
    let request = GenerateSshKeyIn {
        name: input.key_name,
    };
    let made = crate::routes::ssh_keys::generate_ssh_key(State(state), principal, AppJson(request))
        .await
        .map_err(|e| match e {
            ApiError::Invalid { reason, .. } => ApiError::Invalid {
                field: "keyName".into(),
                reason,
            },
            e => e,
        })?;
    let bytes = to_bytes(made.into_body(), 64 * 1024)
        .await
        .map_err(ApiError::internal)?;
    let made: Value = serde_json::from_slice(&bytes).map_err(ApiError::internal)?;
    let body = json!({"keyId": made["key"]["id"], "privateKey": made["private_key"]});
    let mut response = (StatusCode::OK, Json(body)).into_response();
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::naic_field;

    #[test]
    fn errors_name_the_fields_as_the_naic_request_does() {
        for (ours, theirs) in [
            ("name", "vmName"),
            ("ssh_key_id", "sshKeyId"),
            ("template", "vmTemplateId"),
            ("duration_hours", "duration"),
            ("allow_ssh_from[1]", "ipRanges[1]"),
            ("body", "body"),
        ] {
            assert_eq!(naic_field(ours), theirs);
        }
    }
}
