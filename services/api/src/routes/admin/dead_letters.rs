//! `/api/v1/admin/dead-letters`: events the relay or projector parked because they could
//! not be handled (undecodable, or too large to publish), and asking for their replay once
//! the cause is fixed. The follower replays on its next pass (it is woken at once).

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use utoipa::{IntoParams, ToSchema};

use crate::{ApiError, AppState};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/admin/dead-letters", get(list_dead_letters))
        .route("/admin/dead-letters/{id}/replay", post(replay_dead_letter))
}

// Deliberately the same fields as `store::dead_letters`' row: the wire type is ours to keep
// stable and documented (OpenAPI), the row follows the table.
/// A parked event.
#[derive(Debug, Serialize, ToSchema)]
pub struct DeadLetterOut {
    pub id: i64,
    /// Which follower parked it: `relay` or `projector`.
    pub follower: String,
    /// The event's place in the events table.
    pub position: i64,
    pub aggregate_type: String,
    pub aggregate_id: String,
    pub sequence: i64,
    /// Why it could not be handled, the last time it was tried.
    pub error: String,
    /// How many times it was tried: when parked, and at each replay that failed.
    pub attempts: i32,
    #[serde(with = "time::serde::rfc3339")]
    pub parked_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339::option")]
    pub replay_requested_at: Option<OffsetDateTime>,
    /// When a replay succeeded; unresolved ones have none.
    #[serde(with = "time::serde::rfc3339::option")]
    pub resolved_at: Option<OffsetDateTime>,
}

impl From<store::dead_letters::DeadLetter> for DeadLetterOut {
    fn from(d: store::dead_letters::DeadLetter) -> Self {
        Self {
            id: d.id,
            follower: d.follower,
            position: d.position,
            aggregate_type: d.aggregate_type,
            aggregate_id: d.aggregate_id,
            sequence: d.sequence,
            error: d.error,
            attempts: d.attempts,
            parked_at: d.parked_at,
            replay_requested_at: d.replay_requested_at,
            resolved_at: d.resolved_at,
        }
    }
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DeadLetterQuery {
    /// Include the resolved ones (default: only those still parked).
    #[serde(default)]
    pub all: bool,
    /// At most this many, newest first (default 100, at most 1000).
    pub limit: Option<i64>,
}

/// The parked events, newest first.
#[utoipa::path(get, path = "/api/v1/admin/dead-letters", tag = "admin",
    security(("bearer" = [])),
    params(DeadLetterQuery),
    responses((status = 200, body = [DeadLetterOut]), (status = 401, body = crate::error::ErrorBody)))]
pub async fn list_dead_letters(
    State(state): State<AppState>,
    Query(query): Query<DeadLetterQuery>,
) -> Result<Json<Vec<DeadLetterOut>>, ApiError> {
    let limit = query.limit.unwrap_or(100).clamp(1, 1000);
    let letters = store::dead_letters::list(&state.app.pool, query.all, limit).await?;
    Ok(Json(letters.into_iter().map(DeadLetterOut::from).collect()))
}

/// Asks the follower that parked the event to try it again; `202`, since it happens on the
/// follower's next pass. `404` for an unknown or already resolved dead letter.
#[utoipa::path(post, path = "/api/v1/admin/dead-letters/{id}/replay", tag = "admin",
    security(("bearer" = [])),
    params(("id" = i64, Path, description = "The dead letter's id")),
    responses((status = 202, body = DeadLetterOut), (status = 401, body = crate::error::ErrorBody),
        (status = 404, body = crate::error::ErrorBody)))]
pub async fn replay_dead_letter(
    State(state): State<AppState>,
    Path(id): Path<i64>,
) -> Result<(StatusCode, Json<DeadLetterOut>), ApiError> {
    let letter = state.app.replay_dead_letter(id).await?;
    Ok((StatusCode::ACCEPTED, Json(letter.into())))
}
