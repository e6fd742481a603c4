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
        .route("/metrics", get(get_metrics))
}

/// The process's metrics in the Prometheus (OpenMetrics) text format: HTTP requests and
/// latencies by route, events committed and relayed, ingester batches, runner starts, and
/// the platform gauges. Outside the bearer auth, like the health checks: restrict it at the
/// network (see docs/operations.md).
#[utoipa::path(get, path = "/metrics", tag = "health", responses(
    (status = 200, description = "OpenMetrics text", content_type = "application/openmetrics-text"),
))]
pub async fn get_metrics() -> impl axum::response::IntoResponse {
    (
        [(
            axum::http::header::CONTENT_TYPE,
            telemetry::metrics::CONTENT_TYPE,
        )],
        telemetry::metrics().encode(),
    )
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
        .execute(&state.app.pool)
        .await
        .map_err(|_| ApiError::Unavailable("Postgres is not reachable".into()))?;
    if state.app.bus.client.connection_state() != bus::async_nats::connection::State::Connected {
        return Err(ApiError::Unavailable("NATS is not reachable".into()));
    }
    Ok(Json(HealthOut { status: "ok" }))
}
