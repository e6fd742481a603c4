//! `POST /api/v1/callbacks/{token}`: what a VM reports as it boots (cloud-init) and what
//! its application reports. No other authentication: the token, signed by the platform,
//! names the VM, its create job and the callback kind, and expires. A token that does not
//! check, has expired, or was used already answers `404` like any unknown URL, and changes
//! nothing.

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use domain::callbacks::CallbackClaims;
use domain::provisioning::{BootReport, CallbackKind, Provisioning, ProvisioningCommand};
use serde::Deserialize;
use time::OffsetDateTime;
use utoipa::ToSchema;

use crate::error::vm_command_failed;
use crate::{ApiError, AppState, RequestId};

/// What a callback may carry, as JSON or as a form (cloud-init's `phone_home` posts a
/// form with `instance_id`, `hostname` and `fqdn`). Fields other kinds do not use are
/// ignored.
#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct CallbackIn {
    /// `phone_home`: the VM's host name.
    pub hostname: Option<String>,
    /// `app_ready`: where to reach the application (http or https).
    pub url: Option<String>,
    /// `app_failed`: why it could not start.
    pub reason: Option<String>,
}

/// Records a VM's callback: `boot_started`, `phone_home`, `app_starting`, `app_ready`
/// or `app_failed`, as its token says. Each URL works once.
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
#[tracing::instrument(skip_all, fields(vm_id))]
pub async fn callback(
    State(state): State<AppState>,
    Path(token): Path<String>,
    request_id: RequestId,
    headers: HeaderMap,
    body: Bytes,
) -> Result<StatusCode, ApiError> {
    let unknown = || ApiError::NotFound("no such callback".into());
    let claims = state
        .app
        .callbacks
        .verify(&token, OffsetDateTime::now_utc())
        .ok_or_else(unknown)?;
    tracing::Span::current().record("vm_id", tracing::field::display(claims.vm));
    let report = report(&claims, parse(&headers, &body)?)?;
    let command = ProvisioningCommand::Callback {
        job_id: claims.job,
        report,
    };
    let metadata = store::Metadata::new(store::Actor::Vm, request_id.as_str().to_owned());
    store::execute::<Provisioning>(&state.app.pool, claims.vm, command, &metadata)
        .await
        .map_err(|e| vm_command_failed(claims.vm, e))?;
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
    ];
    for (field, value) in texts {
        crate::extract::no_nul(field, value.as_deref())?;
    }
    Ok(parsed)
}

/// The report of a callback of `claims.kind`, its fields checked.
fn report(claims: &CallbackClaims, input: CallbackIn) -> Result<BootReport, ApiError> {
    let invalid = |field: &str, reason: &str| ApiError::Invalid {
        field: field.into(),
        reason: reason.into(),
    };
    Ok(match claims.kind {
        CallbackKind::BootStarted => BootReport::BootStarted,
        CallbackKind::PhoneHome => {
            let hostname = input.hostname.unwrap_or_default();
            if !valid_hostname(&hostname) {
                return Err(invalid(
                    "hostname",
                    "must be a host name: 1 to 253 characters of letters, digits, '-' and '.'",
                ));
            }
            BootReport::PhoneHome { hostname }
        }
        CallbackKind::AppStarting => BootReport::AppStarting,
        CallbackKind::AppReady => {
            let url = input.url.unwrap_or_default();
            let parsed = url::Url::parse(&url).ok();
            if !parsed.is_some_and(|u| matches!(u.scheme(), "http" | "https") && u.has_host()) {
                return Err(invalid("url", "must be an http or https URL"));
            }
            BootReport::AppReady { url }
        }
        CallbackKind::AppFailed => BootReport::AppFailed {
            reason: input
                .reason
                .filter(|r| !r.trim().is_empty())
                .unwrap_or_else(|| "the application reported a failure".into()),
        },
    })
}

fn valid_hostname(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.')
}
