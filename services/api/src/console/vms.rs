//! A VM's page: the VM with its jobs, taskservs and history (the list is `vm_list`). Read
//! from the same read models as `/api/v1/vms`; another user's VM is a 404 page, as one
//! that does not exist.

use std::collections::HashMap;

use askama::Template;
use axum::extract::{Path, State};
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::response::Response;
use domain::identity::UserId;
use domain::provisioning::VmId;

use super::form::Refusal;
use super::session::{sign_in_required, signed_in};
use super::{not_found, page, shown, Layout};
use crate::auth::Principal;
use crate::routes::taskservs::VmTaskservOut;
use crate::{ApiError, AppState};

/// How many of a VM's last events its page shows.
pub(super) const HISTORY_SHOWN: usize = 50;

/// A VM as a row of the list and the head of its page.
pub(super) struct VmLine {
    pub(super) id: uuid::Uuid,
    pub(super) name: String,
    pub(super) status: String,
    pub(super) provider: String,
    pub(super) template: String,
    pub(super) ip: Option<String>,
    pub(super) expires: String,
    /// The owner's email (shown to admins only).
    pub(super) owner: String,
}

impl VmLine {
    pub(super) fn of(row: &store::views::VmRow, owners: &HashMap<uuid::Uuid, String>) -> Self {
        VmLine {
            id: row.id,
            name: row.name.clone(),
            status: row.status.clone(),
            provider: row.provider.clone(),
            template: row.template.clone(),
            ip: row.ip.clone(),
            expires: row.expires_at.map_or_else(|| "never".to_owned(), shown),
            owner: owners
                .get(&row.owner)
                .cloned()
                .unwrap_or_else(|| row.owner.to_string()),
        }
    }
}

/// The emails of `users`, by id (those that vanished left out).
pub(super) async fn emails(
    state: &AppState,
    users: impl Iterator<Item = uuid::Uuid>,
) -> Result<HashMap<uuid::Uuid, String>, ApiError> {
    let mut found = HashMap::new();
    for user in users {
        if found.contains_key(&user) {
            continue;
        }
        let row = store::users::get(&state.app.pool, UserId::new(user))
            .await
            .map_err(crate::error::store_failed)?;
        if let Some(row) = row {
            found.insert(user, row.email);
        }
    }
    Ok(found)
}

struct JobLine {
    id: u32,
    action: String,
    state: String,
    queued: String,
    ended: String,
    reason: String,
    /// Queued or running: it may be cancelled.
    open: bool,
    /// Running: a cancel that did not stop it may be forced.
    running: bool,
}

pub(super) struct EventLine {
    /// Its place in the events table: the VM's page links to the VM as it was there.
    pub position: i64,
    pub sequence: i64,
    pub event_type: String,
    pub recorded: String,
    pub actor: String,
}

#[derive(Template)]
#[template(path = "console/vm.html")]
struct VmPage {
    layout: Layout,
    vm: VmLine,
    last_error: Option<String>,
    /// `ssh user@address`, once the VM has an address.
    ssh: Option<String>,
    jobs: Vec<JobLine>,
    taskservs: Vec<VmTaskservOut>,
    events: Vec<EventLine>,
    /// Whether older events were left out.
    earlier: bool,
    /// What was just done, when the page follows a form.
    notice: Option<&'static str>,
    /// Why what was asked was refused.
    refusal: Option<String>,
    /// The longest extension the form offers.
    max_extend: u16,
    /// The latest job's Terraform output.
    log: Vec<super::log::LogShown>,
    /// The VM's last event the page shows: its stream resumes after it.
    since: u64,
}

/// `GET /console/vms/{id}`.
#[tracing::instrument(skip_all, fields(vm_id = %id))]
pub(crate) async fn show_vm(
    State(state): State<AppState>,
    Path(id): Path<String>,
    parts: Parts,
) -> Result<Response, ApiError> {
    let Some(principal) = signed_in(&state, &parts).await? else {
        return Ok(sign_in_required(&state, &parts));
    };
    let Ok(vm) = id.parse::<VmId>() else {
        return Ok(not_found(&principal, format!("There is no VM {id}.")));
    };
    if let Some(at) = super::vm_at::asked(&parts) {
        return super::vm_at::vm_at_answer(&state, &principal, vm, &at).await;
    }
    let notice = parts.uri.query().and_then(super::vm_actions::notice);
    vm_answer(&state, &principal, vm, StatusCode::OK, notice, None).await
}

/// VM `vm`'s page with `status`, a notice of what was just done, or a refusal of what was
/// asked; the 404 page when the caller may not see it.
pub(crate) async fn vm_answer(
    state: &AppState,
    principal: &Principal,
    vm: VmId,
    status: StatusCode,
    notice: Option<&'static str>,
    refusal: Option<Refusal>,
) -> Result<Response, ApiError> {
    match state.app.visible(principal, vm).await {
        Ok(()) => {}
        Err(app::Error::NotFound(_)) => {
            return Ok(not_found(principal, format!("There is no VM {vm}.")))
        }
        Err(e) => return Err(e.into()),
    }
    let (Some(row), Some(view)) = (
        store::views::get(&state.app.pool, vm).await?,
        store::views::view(&state.app.pool, vm).await?,
    ) else {
        return Ok(not_found(principal, format!("There is no VM {vm}.")));
    };
    let mut shown = vm_page(state, principal, vm, row, view).await?;
    shown.notice = notice;
    shown.refusal = refusal.map(|r| r.detail);
    Ok(page(status, &shown))
}

async fn vm_page(
    state: &AppState,
    principal: &Principal,
    vm: VmId,
    row: store::views::VmRow,
    view: domain::provisioning::VmView,
) -> Result<VmPage, ApiError> {
    let owners = match principal.is_admin() {
        true => emails(state, std::iter::once(row.owner)).await?,
        false => HashMap::new(),
    };
    let ssh = match (&row.ip, &view.spec) {
        (Some(ip), Some(spec)) => Some(format!("ssh {}@{ip}", spec.username)),
        _ => None,
    };
    let jobs = view
        .jobs
        .iter()
        .map(|job| JobLine {
            id: job.id.get(),
            action: job.action.as_str().to_owned(),
            state: job.state.as_str().to_owned(),
            queued: shown(job.queued_at),
            ended: job.ended_at.map(shown).unwrap_or_default(),
            reason: job.reason.clone().unwrap_or_default(),
            open: !job.state.is_finished(),
            running: job.state == domain::provisioning::JobState::Running,
        })
        .collect();
    let (events, earlier) = history(state, vm, None, HISTORY_SHOWN).await?;
    let job_ids: Vec<u32> = view.jobs.iter().map(|j| j.id.get()).collect();
    let log = super::log::latest_job_lines(&state.app.pool, vm, &job_ids).await?;
    Ok(VmPage {
        layout: Layout::of(principal),
        vm: VmLine::of(&row, &owners),
        last_error: row.last_error.clone(),
        ssh,
        jobs,
        taskservs: row.taskservs.0.iter().map(Into::into).collect(),
        events,
        earlier,
        notice: None,
        refusal: None,
        max_extend: 168,
        log,
        since: view.last_sequence,
    })
}

/// The VM's last `count` events (up to the one at position `upto`, when given), Terraform's
/// lines left out, oldest first; and whether there were more before them. Read a page at a
/// time, keeping the last `count`.
pub(super) async fn history(
    state: &AppState,
    vm: VmId,
    upto: Option<i64>,
    count: usize,
) -> Result<(Vec<EventLine>, bool), ApiError> {
    const PAGE: usize = 10_000;
    let filter = store::audit::AuditFilter {
        vm: Some(vm),
        exclude_logs: true,
        ..Default::default()
    };
    let horizon = store::feed::horizon(&state.app.pool).await?;
    let mut last = std::collections::VecDeque::new();
    let mut earlier = false;
    let mut after = 0;
    loop {
        let start = store::audit::Start::Sequence(after);
        let page = store::audit::page(&state.app.pool, &filter, start, horizon, PAGE as i64)
            .await
            .map_err(crate::routes::admin::audit_error)?;
        let full = page.len() == PAGE;
        after = page
            .last()
            .and_then(|e| u64::try_from(e.sequence).ok())
            .unwrap_or(after);
        let mut reached = false;
        for entry in page {
            if upto.is_some_and(|upto| entry.position > upto) {
                reached = true;
                break;
            }
            last.push_back(entry);
            if last.len() > count {
                last.pop_front();
                earlier = true;
            }
        }
        if reached || !full {
            break;
        }
    }
    let lines = last
        .iter()
        .map(|e| EventLine {
            position: e.position,
            sequence: e.sequence,
            event_type: e.event_type.clone(),
            recorded: shown(e.recorded_at),
            actor: e.actor.clone().unwrap_or_default(),
        })
        .collect();
    Ok((lines, earlier))
}
