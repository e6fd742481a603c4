//! Policies, for admins: where the policies in force come from, how many there are, the
//! requests each refused since start, and a button to read them again.

use askama::Template;
use axum::extract::State;
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::response::Response;

use super::super::form::{see_other, Refusal};
use super::super::{page, Layout};
use super::{admin_poster, admin_reader};
use crate::auth::Principal;
use crate::{ApiError, AppState};

#[derive(Template)]
#[template(path = "console/admin/policies.html")]
struct PoliciesPage {
    layout: Layout,
    source: String,
    count: usize,
    denials: Vec<(String, u64)>,
    refusal: Option<Refusal>,
    notice: Option<&'static str>,
}

/// `GET /console/admin/policies`.
#[tracing::instrument(skip_all)]
pub(crate) async fn show_policies(
    State(state): State<AppState>,
    parts: Parts,
) -> Result<Response, ApiError> {
    let principal = match admin_reader(&state, &parts).await? {
        Ok(principal) => principal,
        Err(answer) => return Ok(answer),
    };
    let notice =
        (parts.uri.query() == Some("done=reloaded")).then_some("The policies were read again.");
    Ok(answer(&state, &principal, StatusCode::OK, None, notice))
}

/// `POST /console/admin/policies/reload`.
#[tracing::instrument(skip_all)]
pub(crate) async fn reload_policies(
    State(state): State<AppState>,
    mut parts: Parts,
) -> Result<Response, ApiError> {
    let (principal, _) = match admin_poster(&state, &mut parts).await? {
        Ok(gate) => gate,
        Err(answer) => return Ok(answer),
    };
    match state.app.reload_policies() {
        Ok(_) => Ok(see_other("/console/admin/policies?done=reloaded")),
        Err(e) => {
            let refusal = Refusal::of(e)?;
            let status = refusal.status;
            Ok(answer(&state, &principal, status, Some(refusal), None))
        }
    }
}

fn answer(
    state: &AppState,
    principal: &Principal,
    status: StatusCode,
    refusal: Option<Refusal>,
    notice: Option<&'static str>,
) -> Response {
    let policies = &state.app.policies;
    page(
        status,
        &PoliciesPage {
            layout: Layout::of(principal),
            source: policies.source(),
            count: policies.book().len(),
            denials: policies.denials().into_iter().collect(),
            refusal,
            notice,
        },
    )
}
