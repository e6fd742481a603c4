//! The VM page's forms: extend, refresh, destroy, retry, and cancel or force-cancel a job. Each asks
//! its use case and goes back to the VM's page (`303`), with a notice of what was done; a
//! refusal is shown on the VM's page itself, with the status the API would answer.

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::request::Parts;
use axum::response::Response;
use domain::provisioning::{JobId, VmId};

use super::form::{done_notice, poster, see_other, Fields, Refusal};
use super::not_found;
use super::vms::vm_answer;
use crate::{ApiError, AppState};

/// What a VM form did, as `?done=` names it: the notice its page shows. A fixed list, so a
/// link cannot make the page say anything else.
const NOTICES: [(&str, &str); 7] = [
    (
        "created",
        "The VM was requested; it is created in the background.",
    ),
    ("extended", "The VM's life was extended."),
    (
        "refresh",
        "A refresh job is queued: Terraform reads the VM as the cloud has it.",
    ),
    ("destroy", "The VM is to be destroyed."),
    ("retry", "The failed job is queued again."),
    ("cancel", "The job's cancel was asked."),
    ("force-cancel", "The job was ended."),
];

/// The notice of a page's query (`done=<what>`), if it names one.
pub(crate) fn notice(query: &str) -> Option<&'static str> {
    done_notice(query, &NOTICES)
}

/// What a VM's form asks.
enum Action {
    Extend,
    Refresh,
    Destroy,
    Retry,
    Cancel(String),
    ForceCancel(String),
}

/// `POST /console/vms/{id}/extend` (field `hours`).
pub(crate) async fn extend_vm(
    state: State<AppState>,
    Path(id): Path<String>,
    parts: Parts,
    body: Bytes,
) -> Result<Response, ApiError> {
    act(state, id, parts, body, Action::Extend).await
}

/// `POST /console/vms/{id}/refresh`.
pub(crate) async fn refresh_vm(
    state: State<AppState>,
    Path(id): Path<String>,
    parts: Parts,
    body: Bytes,
) -> Result<Response, ApiError> {
    act(state, id, parts, body, Action::Refresh).await
}

/// `POST /console/vms/{id}/destroy`.
pub(crate) async fn destroy_vm(
    state: State<AppState>,
    Path(id): Path<String>,
    parts: Parts,
    body: Bytes,
) -> Result<Response, ApiError> {
    act(state, id, parts, body, Action::Destroy).await
}

/// `POST /console/vms/{id}/retry`.
pub(crate) async fn retry_vm(
    state: State<AppState>,
    Path(id): Path<String>,
    parts: Parts,
    body: Bytes,
) -> Result<Response, ApiError> {
    act(state, id, parts, body, Action::Retry).await
}

/// `POST /console/vms/{id}/jobs/{job}/cancel`.
pub(crate) async fn cancel_job(
    state: State<AppState>,
    Path((id, job)): Path<(String, String)>,
    parts: Parts,
    body: Bytes,
) -> Result<Response, ApiError> {
    act(state, id, parts, body, Action::Cancel(job)).await
}

/// `POST /console/vms/{id}/jobs/{job}/force-cancel`.
pub(crate) async fn force_cancel_job(
    state: State<AppState>,
    Path((id, job)): Path<(String, String)>,
    parts: Parts,
    body: Bytes,
) -> Result<Response, ApiError> {
    act(state, id, parts, body, Action::ForceCancel(job)).await
}

#[tracing::instrument(skip_all, fields(vm_id = %id))]
async fn act(
    State(state): State<AppState>,
    id: String,
    mut parts: Parts,
    body: Bytes,
    action: Action,
) -> Result<Response, ApiError> {
    let (principal, caller) = match poster(&state, &mut parts).await? {
        Ok(gate) => gate,
        Err(answer) => return Ok(answer),
    };
    let Ok(vm) = id.parse::<VmId>() else {
        return Ok(not_found(&principal, format!("There is no VM {id}.")));
    };
    let fields = Fields::parse(&body);
    let app = &state.app;
    let (done, result) = match action {
        Action::Extend => match hours(fields.get("hours")) {
            Ok(hours) => ("extended", app.extend_vm(&caller, vm, hours, None).await),
            Err(e) => ("extended", Err(e)),
        },
        Action::Refresh => ("refresh", app.refresh_vm(&caller, vm, None).await),
        Action::Destroy => ("destroy", app.destroy_vm(&caller, vm, None).await),
        Action::Retry => ("retry", app.retry_vm(&caller, vm, None).await),
        Action::Cancel(job) => match job_id(&job) {
            Ok(job) => ("cancel", app.cancel_job(&caller, vm, job, None).await),
            Err(e) => ("cancel", Err(e)),
        },
        Action::ForceCancel(job) => match job_id(&job) {
            Ok(job) => (
                "force-cancel",
                app.force_cancel_job(&caller, vm, job, None).await,
            ),
            Err(e) => ("force-cancel", Err(e)),
        },
    };
    match result {
        Ok(_) => Ok(see_other(&format!("/console/vms/{vm}?done={done}"))),
        Err(e) => {
            let refusal = Refusal::of(e)?;
            let status = refusal.status;
            vm_answer(&state, &principal, vm, status, None, Some(refusal)).await
        }
    }
}

/// The hours of an extension: 1 to 168.
fn hours(text: &str) -> Result<u16, app::Error> {
    text.parse::<u16>()
        .ok()
        .filter(|h| (1..=168).contains(h))
        .ok_or_else(|| app::Error::Invalid {
            field: "hours".into(),
            reason: "give a whole number of hours from 1 to 168".into(),
        })
}

fn job_id(text: &str) -> Result<JobId, app::Error> {
    text.parse::<u32>()
        .ok()
        .filter(|n| *n > 0)
        .map(JobId::new)
        .ok_or_else(|| app::Error::NotFound(format!("no job {text:?}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hours_are_checked_before_the_use_case() {
        assert_eq!(hours("4").unwrap(), 4);
        for bad in ["0", "169", "x", ""] {
            assert!(hours(bad).is_err(), "{bad}");
        }
    }
}
