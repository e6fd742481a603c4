//! Dead letters, for admins: the events a follower parked (newest first, the resolved ones
//! too when asked), each with a button to have its follower try it again.

use askama::Template;
use axum::extract::{Path, State};
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::response::Response;

use super::super::form::{see_other, Refusal};
use super::super::{page, shown, Layout};
use super::{admin_poster, admin_reader};
use crate::auth::Principal;
use crate::{ApiError, AppState};

/// How many the page lists.
const SHOWN: i64 = 200;

struct LetterLine {
    id: i64,
    follower: String,
    event: String,
    error: String,
    attempts: i32,
    parked: String,
    replay: String,
    resolved: Option<String>,
}

#[derive(Template)]
#[template(path = "console/admin/dead_letters.html")]
struct LettersPage {
    layout: Layout,
    letters: Vec<LetterLine>,
    all: bool,
    refusal: Option<Refusal>,
    notice: Option<&'static str>,
}

/// `GET /console/admin/dead-letters` (`?all=true`: the resolved ones too).
#[tracing::instrument(skip_all)]
pub(crate) async fn list_dead_letters(
    State(state): State<AppState>,
    parts: Parts,
) -> Result<Response, ApiError> {
    let principal = match admin_reader(&state, &parts).await? {
        Ok(principal) => principal,
        Err(answer) => return Ok(answer),
    };
    let query = parts.uri.query().unwrap_or_default();
    let all = query.split('&').any(|p| p == "all=true");
    let notice = query
        .split('&')
        .any(|p| p == "done=replay")
        .then_some("Its follower tries it again on its next pass.");
    answer(&state, &principal, StatusCode::OK, all, None, notice).await
}

/// `POST /console/admin/dead-letters/{id}/replay`.
#[tracing::instrument(skip_all)]
pub(crate) async fn replay_dead_letter(
    State(state): State<AppState>,
    Path(id): Path<String>,
    mut parts: Parts,
) -> Result<Response, ApiError> {
    let (principal, _) = match admin_poster(&state, &mut parts).await? {
        Ok(gate) => gate,
        Err(answer) => return Ok(answer),
    };
    let replayed = match id.parse::<i64>() {
        Ok(id) => state.app.replay_dead_letter(id).await.map(|_| ()),
        Err(_) => Err(app::Error::NotFound(format!("no dead letter {id:?}"))),
    };
    match replayed {
        Ok(()) => Ok(see_other("/console/admin/dead-letters?done=replay")),
        Err(e) => {
            let refusal = Refusal::of(e)?;
            let status = refusal.status;
            answer(&state, &principal, status, false, Some(refusal), None).await
        }
    }
}

async fn answer(
    state: &AppState,
    principal: &Principal,
    status: StatusCode,
    all: bool,
    refusal: Option<Refusal>,
    notice: Option<&'static str>,
) -> Result<Response, ApiError> {
    let letters = store::dead_letters::list(&state.app.pool, all, SHOWN)
        .await?
        .into_iter()
        .map(|d| LetterLine {
            id: d.id,
            follower: d.follower,
            event: format!(
                "{} {} #{} (position {})",
                d.aggregate_type, d.aggregate_id, d.sequence, d.position
            ),
            error: d.error,
            attempts: d.attempts,
            parked: shown(d.parked_at),
            replay: d.replay_requested_at.map(shown).unwrap_or_default(),
            resolved: d.resolved_at.map(shown),
        })
        .collect();
    Ok(page(
        status,
        &LettersPage {
            layout: Layout::of(principal),
            letters,
            all,
            refusal,
            notice,
        },
    ))
}
