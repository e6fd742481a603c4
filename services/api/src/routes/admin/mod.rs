//! `/api/v1/admin`: changing the catalog of providers and templates. Every change is a
//! command on the `Catalog` aggregate, so it is validated there and recorded as an event
//! with its actor; `GET /admin/catalog/events` is that audit history.

mod dead_letters;
mod providers;
mod templates;

pub use dead_letters::*;
pub use providers::*;
pub use templates::*;

use axum::extract::{Query, State};
use axum::routing::get;
use axum::{Json, Router};
use domain::catalog::CatalogCommand;
use serde::Deserialize;
use utoipa::ToSchema;

use crate::routes::events::{EventOut, Page};
use crate::routes::metadata;
use crate::{ApiError, AppState, RequestId};

pub fn router() -> Router<AppState> {
    Router::new()
        .merge(providers::router())
        .merge(templates::router())
        .merge(dead_letters::router())
        .route("/admin/catalog/events", get(list_catalog_events))
}

/// A new order: every id, each once, first first.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OrderIn {
    pub ids: Vec<String>,
}

/// The catalog's audit history in order: every change to providers and templates.
#[utoipa::path(get, path = "/api/v1/admin/catalog/events", tag = "admin",
    security(("bearer" = [])),
    params(Page),
    responses((status = 200, body = [EventOut]), (status = 401, body = crate::error::ErrorBody)))]
pub async fn list_catalog_events(
    State(state): State<AppState>,
    Query(page): Query<Page>,
) -> Result<Json<Vec<EventOut>>, ApiError> {
    let events = store::catalog::catalog_events(&state.pool, page.after(), page.limit()).await?;
    Ok(Json(events.into_iter().map(EventOut::from).collect()))
}

fn invalid(field: &str, reason: impl Into<String>) -> ApiError {
    ApiError::Invalid {
        field: field.into(),
        reason: reason.into(),
    }
}

/// Executes `commands` in order as the admin, all or nothing. A refusal is answered as
/// `error.rs` says: unknown ids 404, duplicates 409, invalid fields 422.
async fn execute(
    state: &AppState,
    request_id: &RequestId,
    commands: Vec<CatalogCommand>,
) -> Result<(), ApiError> {
    store::catalog::execute(&state.pool, commands, &metadata(request_id)).await?;
    Ok(())
}

/// Waits until the tables show every catalog event so far, so the answer to a command (and
/// a GET right after it) shows its effect. Gives up after a few seconds (the projector may
/// be down); the command is committed either way.
async fn read_your_writes(state: &AppState) -> Result<(), ApiError> {
    let target = store::catalog::last_sequence(&state.pool).await?;
    crate::routes::wait_for_projection(target, "the catalog", || async {
        Ok(store::catalog::projected_sequence(&state.pool).await?)
    })
    .await
}
