//! One job's page: its action, state and times, and all of the Terraform output it printed
//! (colours as classes, the failing diagnostic marked, as on the VM's page); while the job
//! is queued or running the page's script adds its lines as they arrive.

use askama::Template;
use axum::extract::{Path, State};
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::response::Response;
use domain::provisioning::VmId;

use super::log::LogShown;
use super::session::{sign_in_required, signed_in};
use super::{not_found, page, shown, Layout};
use crate::{ApiError, AppState};

/// Lines read at a time.
const CHUNK: i64 = 1000;

/// Lines the page shows at most; the rest are in the API's logs.
const MOST: usize = 50_000;

#[derive(Template)]
#[template(path = "console/job.html")]
struct JobPage {
    layout: Layout,
    vm: String,
    name: String,
    job: u32,
    action: String,
    state: String,
    queued: String,
    started: String,
    ended: String,
    reason: String,
    /// Still queued or running: the script follows the VM's stream for its lines.
    open: bool,
    log: Vec<LogShown>,
    /// Whether lines past [`MOST`] were left out.
    cut: bool,
    /// The VM's last event the page shows: its stream resumes after it.
    since: u64,
}

/// `GET /console/vms/{id}/jobs/{job}`: the 404 page for a VM the caller may not see, or a
/// job it does not have.
#[tracing::instrument(skip_all, fields(vm_id = %id))]
pub(crate) async fn show_job(
    State(state): State<AppState>,
    Path((id, job)): Path<(String, String)>,
    parts: Parts,
) -> Result<Response, ApiError> {
    let Some(principal) = signed_in(&state, &parts).await? else {
        return Ok(sign_in_required(&state, &parts));
    };
    let missing = || format!("There is no job {job} of VM {id}.");
    let (Ok(vm), Ok(number)) = (id.parse::<VmId>(), job.parse::<u32>()) else {
        return Ok(not_found(&principal, missing()));
    };
    match state.app.visible(&principal, vm).await {
        Ok(()) => {}
        Err(app::Error::NotFound(_)) => return Ok(not_found(&principal, missing())),
        Err(e) => return Err(e.into()),
    }
    let Some(view) = store::views::view(&state.app.pool, vm).await? else {
        return Ok(not_found(&principal, missing()));
    };
    let Some(record) = view.jobs.iter().find(|j| j.id.get() == number) else {
        return Ok(not_found(&principal, missing()));
    };
    let (log, cut) = all_lines(&state.app.pool, vm, number).await?;
    let shown_page = JobPage {
        layout: Layout::of(&principal),
        vm: vm.to_string(),
        name: view
            .spec
            .as_ref()
            .map_or_else(|| vm.to_string(), |s| s.name.as_str().to_owned()),
        job: number,
        action: record.action.as_str().to_owned(),
        state: record.state.as_str().to_owned(),
        queued: shown(record.queued_at),
        started: record.started_at.map(shown).unwrap_or_default(),
        ended: record.ended_at.map(shown).unwrap_or_default(),
        reason: record.reason.clone().unwrap_or_default(),
        open: !record.state.is_finished(),
        log,
        cut,
        since: view.last_sequence,
    };
    Ok(page(StatusCode::OK, &shown_page))
}

/// The job's lines, oldest first, a chunk at a time up to [`MOST`]; and whether there were
/// more.
async fn all_lines(
    pool: &store::PgPool,
    vm: VmId,
    job: u32,
) -> Result<(Vec<LogShown>, bool), ApiError> {
    let mut lines = Vec::new();
    let mut after = 0;
    loop {
        let rows = store::views::job_logs(pool, vm, job as i32, after, CHUNK).await?;
        let full = rows.len() as i64 == CHUNK;
        for row in &rows {
            lines.push(LogShown {
                job: row.job_id,
                line: row.line,
                ..super::log::shown(&row.level, &row.kind, &row.message)
            });
        }
        match rows.last() {
            Some(last) if full => after = last.line,
            _ => return Ok((lines, false)),
        }
        if lines.len() >= MOST {
            lines.truncate(MOST);
            return Ok((lines, true));
        }
    }
}
