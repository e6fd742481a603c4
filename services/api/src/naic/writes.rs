//! NAIC's writes, as thin adapters over the application layer, as `/api/v1`'s are: the same
//! validation, policies, events, audit actor and correlation id. The layer records the
//! caller's last write, so the frontend's next list or detail read (which waits for it)
//! shows the change.

use app::vms::{SshKeyChoice, VmAfter, VmRequest};
use app::Outcome;
use axum::extract::{Path, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use domain::provisioning::{DurationHours, ProviderId, SshKeyName, TemplateId, VmId, VmName};
use serde::Deserialize;
use serde_json::{json, Value};

use super::catalog::success;
use super::shapes::parse_template_id;
use crate::routes::AppCaller;
use crate::{ApiError, AppJson, AppState};

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

/// Requests a VM; the new VM's id as a bare JSON string, as NAIC answers.
pub async fn create_vm(
    State(state): State<AppState>,
    AppCaller(caller): AppCaller,
    AppJson(input): AppJson<CreateIn>,
) -> Result<Json<String>, ApiError> {
    let request = parse(input).map_err(in_naic_terms)?;
    let outcome = state
        .app
        .request_vm(&caller, request, None)
        .await
        .map_err(|e| in_naic_terms(e.into()))?;
    Ok(Json(done(outcome)?.id.to_string()))
}

/// The request's values, parsed; the application layer checks them against the catalog,
/// the caller's keys, the network rules and the policies, as for `/api/v1`.
fn parse(input: CreateIn) -> Result<VmRequest, ApiError> {
    let (provider, template) =
        parse_template_id(&input.vm_template_id).ok_or_else(|| ApiError::Invalid {
            field: "vmTemplateId".into(),
            reason: format!(
                "{:?} is not a template id from /api/vm/templates",
                input.vm_template_id
            ),
        })?;
    Ok(VmRequest {
        taskservs: vec![],
        cluster: None,
        id: None,
        name: VmName::parse(&input.vm_name)?,
        provider: ProviderId::parse(provider)?,
        template: TemplateId::parse(template)?,
        ssh_key: SshKeyChoice::Registered(input.ssh_key_id),
        allow_ssh_from: input.ip_ranges,
        duration: DurationHours::parse(input.duration)?,
    })
}

/// What a command without an idempotency key did: it is never a replay.
fn done(outcome: Outcome<VmAfter>) -> Result<VmAfter, ApiError> {
    match outcome {
        Outcome::Done(vm) => Ok(vm),
        Outcome::Replayed(_) => Err(ApiError::internal("a replay without an idempotency key")),
    }
}

fn vm_id(id: &str) -> Result<VmId, ApiError> {
    id.parse()
        .map_err(|_| ApiError::NotFound(format!("no VM {id:?}")))
}

/// Requests the VM's destroy.
pub async fn destroy_vm(
    State(state): State<AppState>,
    Path(id): Path<String>,
    AppCaller(caller): AppCaller,
) -> Result<Json<Value>, ApiError> {
    done(state.app.destroy_vm(&caller, vm_id(&id)?, None).await?)?;
    Ok(success())
}

/// Archives a destroyed VM (it stays in `GET /api/vm`, marked `metadata.archived`).
pub async fn archive_vm(
    State(state): State<AppState>,
    Path(id): Path<String>,
    AppCaller(caller): AppCaller,
) -> Result<Json<Value>, ApiError> {
    done(state.app.archive_vm(&caller, vm_id(&id)?, None).await?)?;
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
    AppCaller(caller): AppCaller,
    AppJson(input): AppJson<KeyIn>,
) -> Result<Response, ApiError> {
    let name = SshKeyName::parse(&input.key_name).map_err(|e| ApiError::Invalid {
        field: "keyName".into(),
        reason: e.reason,
    })?;
    let made = state.app.generate_ssh_key(&caller, &name).await?;
    let body = json!({"keyId": made.key.id, "privateKey": made.private_key});
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
