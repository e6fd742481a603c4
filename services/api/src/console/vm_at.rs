//! A VM as it was at a past point (`/console/vms/{id}?at=<position or RFC 3339 time>`):
//! folded from its events up to there, as `GET /api/v1/vms/{id}?at=` folds it, under a
//! banner naming the point, with a link back to the VM as it is, and no forms that act.

use askama::Template;
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::response::Response;
use domain::provisioning::VmId;

use super::form::message;
use super::vms::{history, EventLine, HISTORY_SHOWN};
use super::{not_found, page, shown, Layout};
use crate::auth::Principal;
use crate::{ApiError, AppState};

/// The `at` of the page's query, when it has one (empty too: a point left out is a
/// mistake the page names).
pub(crate) fn asked(parts: &Parts) -> Option<String> {
    let query = parts.uri.query()?;
    url::form_urlencoded::parse(query.as_bytes())
        .find(|(name, _)| name == "at")
        .map(|(_, value)| value.trim().to_owned())
}

struct JobThen {
    id: u32,
    action: String,
    state: String,
    queued: String,
    ended: String,
}

#[derive(Template)]
#[template(path = "console/vm_at.html")]
struct VmAtPage {
    layout: Layout,
    id: String,
    name: String,
    status: String,
    provider: String,
    template: String,
    ip: Option<String>,
    expires: String,
    last_error: Option<String>,
    /// What was asked, as typed.
    asked: String,
    /// The position of the VM's last event at or before the point, and when it was recorded.
    position: i64,
    recorded: String,
    jobs: Vec<JobThen>,
    events: Vec<EventLine>,
    earlier: bool,
}

/// VM `vm` as it was at `at`: the 404 page when the caller may not see it (or it did not
/// exist yet then), a 400 page when `at` is neither a position nor a time.
#[tracing::instrument(skip_all, fields(vm_id = %vm))]
pub(crate) async fn vm_at_answer(
    state: &AppState,
    principal: &Principal,
    vm: VmId,
    at: &str,
) -> Result<Response, ApiError> {
    match state.app.visible(principal, vm).await {
        Ok(()) => {}
        Err(app::Error::NotFound(_)) => {
            return Ok(not_found(principal, format!("There is no VM {vm}.")))
        }
        Err(e) => return Err(e.into()),
    }
    let point = match crate::routes::vms::parse_at(at) {
        Ok(point) => point,
        Err(ApiError::BadRequest(_) | ApiError::Invalid { .. }) => {
            return Ok(message(
                StatusCode::BAD_REQUEST,
                Some(principal),
                "Not a point in time",
                format!(
                    "{at:?} is neither a position (a number) nor an RFC 3339 time \
                     (e.g. 2026-12-07T05:00:00Z) the platform can read."
                ),
            ));
        }
        Err(e) => return Err(e),
    };
    let Some(then) = store::as_of::vm_as_of(&state.app.pool, vm, point).await? else {
        return Ok(not_found(
            principal,
            format!("VM {vm} had not been requested yet at {at}."),
        ));
    };
    let Some(spec) = then.view.spec.as_ref() else {
        return Ok(not_found(
            principal,
            format!("VM {vm} had not been requested yet at {at}."),
        ));
    };
    let lifecycle = &then.view.lifecycle;
    let jobs = then
        .view
        .jobs
        .iter()
        .map(|job| JobThen {
            id: job.id.get(),
            action: job.action.as_str().to_owned(),
            state: job.state.as_str().to_owned(),
            queued: shown(job.queued_at),
            ended: job.ended_at.map(shown).unwrap_or_default(),
        })
        .collect();
    let (events, earlier) = history(state, vm, Some(then.position), HISTORY_SHOWN).await?;
    Ok(page(
        StatusCode::OK,
        &VmAtPage {
            layout: Layout::of(principal),
            id: vm.to_string(),
            name: spec.name.as_str().to_owned(),
            status: lifecycle.status.as_str().to_owned(),
            provider: spec.provider.as_str().to_owned(),
            template: spec.template.as_str().to_owned(),
            ip: lifecycle.ip.clone(),
            expires: lifecycle
                .expiry
                .as_ref()
                .map_or_else(|| "never".to_owned(), |e| shown(e.expires_at)),
            last_error: lifecycle.last_error.clone(),
            asked: at.to_owned(),
            position: then.position,
            recorded: shown(then.updated_at),
            jobs,
            events,
            earlier,
        },
    ))
}
