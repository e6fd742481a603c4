//! `POST /api/v1/callbacks/{token}`: what a VM reports as it boots (cloud-init) and what
//! its application reports, parsed (JSON or a form) and handed to the application layer
//! (`app::callbacks`). No other authentication: the token, signed by the platform,
//! names the VM, its create job and the callback kind, and expires. A token that does not
//! check, has expired, or was used already answers `404` like any unknown URL, and changes
//! nothing.

use app::callbacks::CallbackReport;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use serde::Deserialize;
use utoipa::ToSchema;

use crate::{ApiError, AppState, RequestId};

/// What a callback may carry, as JSON or as a form (cloud-init's `phone_home` posts a
/// form with `instance_id`, `hostname` and `fqdn`). Fields other kinds do not use are
/// ignored.
#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct CallbackIn {
    /// `phone_home`: the VM's host name.
    #[schema(pattern = r"^[^\u0000]*$")]
    pub hostname: Option<String>,
    /// `app_ready`: where to reach the application (http or https).
    #[schema(pattern = r"^[^\u0000]*$")]
    pub url: Option<String>,
    /// `app_failed`: why it could not start.
    #[schema(pattern = r"^[^\u0000]*$")]
    pub reason: Option<String>,
    /// `phone_home`: the VM's SSH host keys, as cloud-init posts them; install jobs pin
    /// these.
    #[schema(pattern = r"^[^\u0000]*$")]
    pub pub_key_ed25519: Option<String>,
    #[schema(pattern = r"^[^\u0000]*$")]
    pub pub_key_ecdsa: Option<String>,
    #[schema(pattern = r"^[^\u0000]*$")]
    pub pub_key_rsa: Option<String>,
    /// `taskserv_installed`: the taskserv's outputs, `key=value` lines.
    #[schema(pattern = r"^[^\u0000]*$")]
    pub outputs: Option<String>,
    /// `taskserv_failed`: its exit code.
    #[schema(pattern = r"^[^\u0000]*$")]
    pub exit_code: Option<String>,
    /// `taskserv_failed`: the last lines of its output.
    #[schema(pattern = r"^[^\u0000]*$")]
    pub last_lines: Option<String>,
}

/// Records a VM's callback: `boot_started`, `phone_home`, `app_starting`, `app_ready`,
/// `app_failed`, or a taskserv's `taskserv_started`, `taskserv_installed` or
/// `taskserv_failed`, as its token says. Each URL works once.
#[utoipa::path(post, path = "/api/v1/callbacks/{token}", tag = "callbacks",
    operation_id = "vm_callback",
    params(("token" = String, Path, description = "The signed token of the callback URL the VM was given")),
    request_body(content = CallbackIn, content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 204, description = "Recorded"),
        (status = 404, description = "No such callback: unknown, expired or used already", body = crate::error::ErrorBody),
        (status = 422, description = "A field is invalid (`detail` names it)", body = crate::error::ErrorBody),
        (status = 503, description = "Nothing was changed; retry after `Retry-After` seconds", body = crate::error::ErrorBody),
    ))]
pub async fn callback(
    State(state): State<AppState>,
    Path(token): Path<String>,
    request_id: RequestId,
    headers: HeaderMap,
    body: Bytes,
) -> Result<StatusCode, ApiError> {
    let input = parse(&headers, &body)?;
    let host_keys = [
        input.pub_key_ed25519,
        input.pub_key_ecdsa,
        input.pub_key_rsa,
    ]
    .into_iter()
    .flatten()
    .map(|k| k.trim().to_owned())
    .filter(|k| !k.is_empty())
    .collect();
    let report = CallbackReport {
        hostname: input.hostname,
        url: input.url,
        reason: input.reason,
        host_keys,
        outputs: input.outputs,
        exit_code: input.exit_code,
        last_lines: input.last_lines,
    };
    state
        .app
        .record_callback(&token, report, request_id.as_str())
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

fn parse(headers: &HeaderMap, body: &Bytes) -> Result<CallbackIn, ApiError> {
    if body.is_empty() {
        return Ok(CallbackIn::default());
    }
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    let parsed = match json {
        true => serde_json::from_slice(body).map_err(|e| e.to_string()),
        false => serde_urlencoded::from_bytes(body).map_err(|e| e.to_string()),
    };
    let parsed: CallbackIn = parsed.map_err(|reason| ApiError::Invalid {
        field: "body".into(),
        reason,
    })?;
    let texts = [
        ("hostname", &parsed.hostname),
        ("url", &parsed.url),
        ("reason", &parsed.reason),
        ("pub_key_ed25519", &parsed.pub_key_ed25519),
        ("pub_key_ecdsa", &parsed.pub_key_ecdsa),
        ("pub_key_rsa", &parsed.pub_key_rsa),
        ("outputs", &parsed.outputs),
        ("exit_code", &parsed.exit_code),
        ("last_lines", &parsed.last_lines),
    ];
    for (field, value) in texts {
        crate::extract::no_nul(field, value.as_deref())?;
    }
    Ok(parsed)
}
