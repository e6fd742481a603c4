//! My limits: what the policies let the caller hold at once, what they hold now, and the
//! policy that gives each limit (the create form shows the same table).

use askama::Template;
use axum::extract::State;
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::response::Response;
use domain::quota::{Limits, Usage};

use super::session::{sign_in_required, signed_in};
use super::{page, Layout};
use crate::{ApiError, AppState};

/// One limit as a row: what, how much is used, the limit and its policy.
pub(crate) struct LimitLine {
    pub what: &'static str,
    pub used: String,
    pub limit: u64,
    pub policy: String,
}

/// The caller's limits beside their usage (the longest duration has no usage).
pub(crate) fn limit_lines(limits: &Limits, usage: &Usage) -> Vec<LimitLine> {
    let line = |what, used: Option<u64>, limit: &domain::quota::Limit| LimitLine {
        what,
        used: used.map(|u| u.to_string()).unwrap_or_else(|| "–".into()),
        limit: limit.value,
        policy: limit.policy.clone(),
    };
    vec![
        line("VMs", Some(usage.vms), &limits.vms),
        line("vCPUs", Some(usage.vcpus), &limits.vcpus),
        line("RAM (MiB)", Some(usage.ram_mib), &limits.ram_mib),
        line("GPUs", Some(usage.gpus), &limits.gpus),
        line("Longest duration (hours)", None, &limits.max_hours),
    ]
}

#[derive(Template)]
#[template(path = "console/limits.html")]
struct LimitsPage {
    layout: Layout,
    role: String,
    groups: String,
    limits: Vec<LimitLine>,
}

/// `GET /console/limits`.
#[tracing::instrument(skip_all)]
pub(crate) async fn show_limits(
    State(state): State<AppState>,
    parts: Parts,
) -> Result<Response, ApiError> {
    let Some(principal) = signed_in(&state, &parts).await? else {
        return Ok(sign_in_required(&state, &parts));
    };
    let (limits, usage) = state.app.limits_and_usage(&principal).await?;
    Ok(page(
        StatusCode::OK,
        &LimitsPage {
            layout: Layout::of(&principal),
            role: principal.role.as_str().to_owned(),
            groups: principal.groups.join(", "),
            limits: limit_lines(&limits, &usage),
        },
    ))
}
