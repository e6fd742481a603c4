//! The SSH keys page: the caller's registered keys, a form to add one, one to have the
//! platform make a pair (its private key shown once, on the answer to that post, never
//! kept), and a delete button per key. Each asks the application layer's use case.

use askama::Template;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::response::Response;
use domain::provisioning::{SshKeyName, SshPublicKey};

use super::form::{poster, see_other, Fields, Refusal};
use super::session::{sign_in_required, signed_in};
use super::{page, shown, Layout};
use crate::auth::Principal;
use crate::{ApiError, AppState};

struct KeyLine {
    id: String,
    name: String,
    algorithm: String,
    fingerprint: String,
    added: String,
}

#[derive(Template)]
#[template(path = "console/keys.html")]
struct KeysPage {
    layout: Layout,
    keys: Vec<KeyLine>,
    /// A pair just made: its name and private key, shown this once.
    generated: Option<(String, String)>,
    /// A refused form: `add` or `generate`, and why.
    refusal: Option<(&'static str, Refusal)>,
    notice: Option<&'static str>,
}

/// `GET /console/keys`.
#[tracing::instrument(skip_all)]
pub(crate) async fn list_keys(
    State(state): State<AppState>,
    parts: Parts,
) -> Result<Response, ApiError> {
    let Some(principal) = signed_in(&state, &parts).await? else {
        return Ok(sign_in_required(&state, &parts));
    };
    let notice = match parts.uri.query() {
        Some("done=added") => Some("The key was registered."),
        Some("done=deleted") => Some("The key was deleted."),
        _ => None,
    };
    answer(&state, &principal, StatusCode::OK, None, None, notice).await
}

/// `POST /console/keys` (fields `name`, `public_key`).
#[tracing::instrument(skip_all)]
pub(crate) async fn add_key(
    State(state): State<AppState>,
    mut parts: Parts,
    body: Bytes,
) -> Result<Response, ApiError> {
    let (principal, caller) = match poster(&state, &mut parts).await? {
        Ok(gate) => gate,
        Err(answer) => return Ok(answer),
    };
    let fields = Fields::parse(&body);
    let added = match (
        SshKeyName::parse(fields.get("name")),
        SshPublicKey::parse_field("public_key", fields.get("public_key")),
    ) {
        (Ok(name), Ok(key)) => state.app.add_ssh_key(&caller, &name, &key).await,
        (Err(e), _) | (_, Err(e)) => Err(e.into()),
    };
    match added {
        Ok(_) => Ok(see_other("/console/keys?done=added")),
        Err(e) => {
            let refusal = Refusal::of(e)?;
            let status = refusal.status;
            answer(
                &state,
                &principal,
                status,
                None,
                Some(("add", refusal)),
                None,
            )
            .await
        }
    }
}

/// `POST /console/keys/generate` (field `name`): the page with the private key, once.
#[tracing::instrument(skip_all)]
pub(crate) async fn generate_key(
    State(state): State<AppState>,
    mut parts: Parts,
    body: Bytes,
) -> Result<Response, ApiError> {
    let (principal, caller) = match poster(&state, &mut parts).await? {
        Ok(gate) => gate,
        Err(answer) => return Ok(answer),
    };
    let fields = Fields::parse(&body);
    let generated = match SshKeyName::parse(fields.get("name")) {
        Ok(name) => state.app.generate_ssh_key(&caller, &name).await,
        Err(e) => Err(e.into()),
    };
    match generated {
        Ok(pair) => {
            let pair = Some((pair.key.name.clone(), pair.private_key));
            answer(&state, &principal, StatusCode::OK, pair, None, None).await
        }
        Err(e) => {
            let refusal = Refusal::of(e)?;
            let status = refusal.status;
            let refusal = Some(("generate", refusal));
            answer(&state, &principal, status, None, refusal, None).await
        }
    }
}

/// `POST /console/keys/{id}/delete`.
#[tracing::instrument(skip_all)]
pub(crate) async fn delete_key(
    State(state): State<AppState>,
    Path(id): Path<String>,
    mut parts: Parts,
) -> Result<Response, ApiError> {
    let (principal, caller) = match poster(&state, &mut parts).await? {
        Ok(gate) => gate,
        Err(answer) => return Ok(answer),
    };
    let deleted = match uuid::Uuid::parse_str(&id) {
        Ok(id) => state.app.delete_ssh_key(&caller, id).await,
        Err(_) => Err(app::Error::NotFound(format!("no SSH key {id:?}"))),
    };
    match deleted {
        Ok(()) => Ok(see_other("/console/keys?done=deleted")),
        Err(e) => {
            let refusal = Refusal::of(e)?;
            let status = refusal.status;
            answer(
                &state,
                &principal,
                status,
                None,
                Some(("list", refusal)),
                None,
            )
            .await
        }
    }
}

async fn answer(
    state: &AppState,
    principal: &Principal,
    status: StatusCode,
    generated: Option<(String, String)>,
    refusal: Option<(&'static str, Refusal)>,
    notice: Option<&'static str>,
) -> Result<Response, ApiError> {
    let keys = state
        .app
        .ssh_keys(principal)
        .await?
        .into_iter()
        .map(|k| KeyLine {
            id: k.id.to_string(),
            name: k.name,
            algorithm: k.algorithm,
            fingerprint: k.fingerprint,
            added: shown(k.created_at),
        })
        .collect();
    Ok(page(
        status,
        &KeysPage {
            layout: Layout::of(principal),
            keys,
            generated,
            refusal,
            notice,
        },
    ))
}

impl KeysPage {
    /// Why the form `which` was refused, if it was.
    fn refused(&self, which: &str) -> Option<&str> {
        match &self.refusal {
            Some((form, refusal)) if *form == which => Some(refusal.detail.as_str()),
            _ => None,
        }
    }
}
