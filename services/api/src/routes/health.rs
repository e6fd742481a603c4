use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use serde::Serialize;
use utoipa::ToSchema;

use crate::{ApiError, AppState};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/healthz", get(get_health))
        .route("/readyz", get(get_ready))
}

#[derive(Serialize, ToSchema)]
pub struct HealthOut {
    /// `ok` when the check passed.
    pub status: &'static str,
}

/// Liveness: the process answers.
#[utoipa::path(get, path = "/healthz", tag = "health", responses((status = 200, body = HealthOut)))]
pub async fn get_health() -> Json<HealthOut> {
    Json(HealthOut { status: "ok" })
}

/// Readiness: Postgres and NATS are reachable.
#[utoipa::path(get, path = "/readyz", tag = "health", responses(
    (status = 200, body = HealthOut),
    (status = 503, body = crate::error::ErrorBody),
))]
pub async fn get_ready(State(state): State<AppState>) -> Result<Json<HealthOut>, ApiError> {
    store::sqlx::query("SELECT 1")
        .execute(&state.pool)
        .await
        .map_err(|_| ApiError::Unavailable("Postgres is not reachable".into()))?;
    if state.bus.client.connection_state() != bus::async_nats::connection::State::Connected {
        return Err(ApiError::Unavailable("NATS is not reachable".into()));
    }
    Ok(Json(HealthOut { status: "ok" }))
}
