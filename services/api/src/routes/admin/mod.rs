//! `/api/v1/admin`: changing the catalog of providers and templates. Every change is a
//! command on the `Catalog` aggregate, so it is validated there and recorded as an event
//! with its actor; `GET /admin/catalog/events` is that audit history.

mod audit;
mod dead_letters;
mod policies;
mod providers;
mod stream;
mod taskservs;
mod templates;
mod user_tokens;
mod users;

pub use audit::*;
pub use dead_letters::*;
pub use policies::*;
pub use providers::*;
pub use stream::*;
pub use taskservs::*;
pub use templates::*;
pub use user_tokens::*;
pub use users::*;

use axum::extract::{Query, State};
use axum::routing::get;
use axum::{Json, Router};
use serde::Deserialize;
use utoipa::ToSchema;

use crate::routes::events::{EventOut, Page};
use crate::{ApiError, AppState};

pub fn router(state: AppState) -> Router<AppState> {
    Router::new()
        .merge(providers::router())
        .merge(templates::router())
        .merge(taskservs::router())
        .merge(dead_letters::router())
        .merge(users::router())
        .merge(user_tokens::router())
        .merge(policies::router())
        .merge(audit::router())
        .route("/admin/catalog/events", get(list_catalog_events))
        .route("/admin/stream", get(stream_platform))
        // A GET with a command's position shows its change.
        .route_layer(axum::middleware::from_fn_with_state(
            state,
            crate::answers::wait_for_min_position,
        ))
        // Admins only: other users are answered 403.
        .route_layer(axum::middleware::from_fn(crate::auth::require_admin))
}

/// A new order: every id, each once, first first.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OrderIn {
    /// At most 1000.
    #[schema(value_type = crate::routes::schemas::CatalogIds)]
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
    let events =
        store::catalog::catalog_events(&state.app.pool, page.after()?, page.limit()).await?;
    Ok(Json(events.into_iter().map(EventOut::from).collect()))
}

fn invalid(field: &str, reason: impl Into<String>) -> ApiError {
    ApiError::Invalid {
        field: field.into(),
        reason: reason.into(),
    }
}
