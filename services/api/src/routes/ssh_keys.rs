//! `/api/v1/ssh-keys`: public keys a user registers once and names in VM requests
//! (`ssh_key_id`), or has the server make. Each key belongs to its owner: no request sees
//! or uses another owner's keys.

use axum::extract::{Path, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use domain::provisioning::{SshKeyName, SshPublicKey};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::auth::Principal;
use crate::routes::AppCaller;
use crate::{ApiError, AppJson, AppState};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/ssh-keys", get(list_ssh_keys).post(add_ssh_key))
        .route("/ssh-keys/generate", post(generate_ssh_key))
        .route("/ssh-keys/{id}", get(get_ssh_key).delete(delete_ssh_key))
}

/// A public key to register.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"name": "laptop", "public_key": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEpXvA+cP8hcraKOw+cO1rzIpAv7ms7vMYjhAKF7Qed/ me@laptop"}))]
pub struct SshKeyIn {
    /// 1 to 64 characters on one line, e.g. `laptop`.
    #[schema(value_type = crate::routes::schemas::OneLineName)]
    pub name: String,
    /// An OpenSSH public key: ed25519, ECDSA (nistp256, nistp384, nistp521) or RSA of at
    /// least 3072 bits, e.g. `ssh-ed25519 AAAA... me@laptop`.
    pub public_key: String,
}

/// A key for the server to make.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GenerateSshKeyIn {
    /// 1 to 64 characters on one line; also the new key's comment.
    #[schema(value_type = crate::routes::schemas::OneLineName)]
    pub name: String,
}

/// A registered public key.
#[derive(Debug, Serialize, ToSchema)]
pub struct SshKeyOut {
    /// Name it in a VM request as `ssh_key_id`.
    pub id: Uuid,
    pub name: String,
    /// The key in OpenSSH's one-line form.
    pub public_key: String,
    /// The key's type as OpenSSH names it, e.g. `ssh-ed25519`.
    pub algorithm: String,
    /// As `ssh-keygen -l` prints it: `SHA256:` and the unpadded base64 of the digest.
    pub fingerprint: String,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: OffsetDateTime,
}

/// A key pair the server made: the private key, shown this once, and the registered public
/// key.
#[derive(Serialize, ToSchema)]
pub struct GeneratedSshKeyOut {
    /// The private key in OpenSSH's format (`-----BEGIN OPENSSH PRIVATE KEY-----`), without
    /// a passphrase. Save it now (`chmod 600`): the server keeps no copy.
    pub private_key: String,
    pub key: SshKeyOut,
}

impl From<store::ssh_keys::SshKeyRow> for SshKeyOut {
    fn from(row: store::ssh_keys::SshKeyRow) -> Self {
        SshKeyOut {
            id: row.id,
            name: row.name,
            public_key: row.public_key,
            algorithm: row.algorithm,
            fingerprint: row.fingerprint,
            created_at: row.created_at,
        }
    }
}

/// Registers a public key. Keys VMs would not accept (DSA, RSA shorter than 3072 bits,
/// security keys) are refused with the reason; the same key registered again is a `409`.
#[utoipa::path(post, path = "/api/v1/ssh-keys", tag = "ssh-keys",
    security(("bearer" = [])),
    request_body = SshKeyIn,
    responses(
        (status = 201, description = "Registered", body = SshKeyOut),
        (status = 409, description = "This key is registered already", body = crate::error::ErrorBody),
        (status = 422, description = "A field is invalid (`detail` names it and says why)", body = crate::error::ErrorBody),
    ))]
#[tracing::instrument(skip_all)]
pub async fn add_ssh_key(
    State(state): State<AppState>,
    AppCaller(caller): AppCaller,
    AppJson(input): AppJson<SshKeyIn>,
) -> Result<(StatusCode, Json<SshKeyOut>), ApiError> {
    let name = SshKeyName::parse(&input.name)?;
    let key = SshPublicKey::parse_field("public_key", &input.public_key)?;
    let row = state.app.add_ssh_key(&caller, &name, &key).await?;
    Ok((StatusCode::CREATED, Json(row.into())))
}

/// Makes an ed25519 key pair and registers its public key. The private key is in this
/// answer only: the server neither stores nor logs it.
#[utoipa::path(post, path = "/api/v1/ssh-keys/generate", tag = "ssh-keys",
    security(("bearer" = [])),
    request_body = GenerateSshKeyIn,
    responses(
        (status = 201, description = "Made and registered; sent with `Cache-Control: no-store`", body = GeneratedSshKeyOut),
        (status = 422, description = "A field is invalid", body = crate::error::ErrorBody),
    ))]
#[tracing::instrument(skip_all)]
pub async fn generate_ssh_key(
    State(state): State<AppState>,
    AppCaller(caller): AppCaller,
    AppJson(input): AppJson<GenerateSshKeyIn>,
) -> Result<Response, ApiError> {
    let name = SshKeyName::parse(&input.name)?;
    let generated = state.app.generate_ssh_key(&caller, &name).await?;
    let body = GeneratedSshKeyOut {
        private_key: generated.private_key,
        key: generated.key.into(),
    };
    let mut response = (StatusCode::CREATED, Json(body)).into_response();
    // No cache on the way may keep the one copy of the private key.
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(response)
}

/// The caller's registered keys, oldest first.
#[utoipa::path(get, path = "/api/v1/ssh-keys", tag = "ssh-keys",
    security(("bearer" = [])),
    responses((status = 200, body = [SshKeyOut]), (status = 401, body = crate::error::ErrorBody)))]
pub async fn list_ssh_keys(
    State(state): State<AppState>,
    owner: Principal,
) -> Result<Json<Vec<SshKeyOut>>, ApiError> {
    let rows = state.app.ssh_keys(&owner).await?;
    Ok(Json(rows.into_iter().map(SshKeyOut::from).collect()))
}

/// One registered key.
#[utoipa::path(get, path = "/api/v1/ssh-keys/{id}", tag = "ssh-keys",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "key id")),
    responses((status = 200, body = SshKeyOut), (status = 404, body = crate::error::ErrorBody)))]
pub async fn get_ssh_key(
    State(state): State<AppState>,
    owner: Principal,
    Path(id): Path<String>,
) -> Result<Json<SshKeyOut>, ApiError> {
    let id = parse_key_id(&id)?;
    Ok(Json(state.app.ssh_key(&owner, id).await?.into()))
}

/// Removes a registered key. VMs created with it keep it: their requests hold a copy.
#[utoipa::path(delete, path = "/api/v1/ssh-keys/{id}", tag = "ssh-keys",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "key id")),
    responses((status = 204, description = "Removed"), (status = 404, body = crate::error::ErrorBody)))]
#[tracing::instrument(skip_all, fields(key_id = %id))]
pub async fn delete_ssh_key(
    State(state): State<AppState>,
    AppCaller(caller): AppCaller,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let id = parse_key_id(&id)?;
    state.app.delete_ssh_key(&caller, id).await?;
    Ok(StatusCode::NO_CONTENT)
}

fn parse_key_id(id: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(id).map_err(|_| ApiError::NotFound(format!("no SSH key {id:?}: ids are UUIDs")))
}
