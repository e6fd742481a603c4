//! A VM's whole history (`/console/vms/{id}/history`): every event but Terraform's lines,
//! oldest first, each linking to the VM as it was there. Its page shows the last few.

use askama::Template;
use axum::extract::{Path, State};
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::response::Response;
use domain::provisioning::VmId;

use super::session::{sign_in_required, signed_in};
use super::vms::{history, EventLine};
use super::{not_found, page, Layout};
use crate::{ApiError, AppState};

/// The most events the page shows: the last ones, beyond that.
const ALL_SHOWN: usize = 10_000;

#[derive(Template)]
#[template(path = "console/vm_history_page.html")]
struct HistoryPage {
    layout: Layout,
    id: String,
    name: String,
    events: Vec<EventLine>,
    /// Always false here: the page links to no longer history.
    earlier: bool,
    /// Whether it holds more than [`ALL_SHOWN`] events, the first not shown.
    capped: bool,
}

/// `GET /console/vms/{id}/history`: the 404 page for a VM the caller may not see.
pub(crate) async fn show_history(
    State(state): State<AppState>,
    Path(id): Path<String>,
    parts: Parts,
) -> Result<Response, ApiError> {
    let Some(principal) = signed_in(&state, &parts).await? else {
        return Ok(sign_in_required(&state, &parts));
    };
    let missing = || not_found(&principal, format!("There is no VM {id}."));
    let Ok(vm) = id.parse::<VmId>() else {
        return Ok(missing());
    };
    match state.app.visible(&principal, vm).await {
        Ok(()) => {}
        Err(app::Error::NotFound(_)) => return Ok(missing()),
        Err(e) => return Err(e.into()),
    }
    let Some(row) = store::views::get(&state.app.pool, vm).await? else {
        return Ok(missing());
    };
    let (events, capped) = history(&state, vm, None, ALL_SHOWN).await?;
    let history = HistoryPage {
        layout: Layout::of(&principal),
        id: vm.to_string(),
        name: row.name.clone(),
        events,
        earlier: false,
        capped,
    };
    Ok(page(StatusCode::OK, &history))
}
