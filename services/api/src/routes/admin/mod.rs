//! `/api/v1/admin`: changing the catalog of providers and templates. Every change is a
//! command on the `Catalog` aggregate, so it is validated there and recorded as an event
//! with its actor; `GET /admin/catalog/events` is that audit history.

mod providers;
mod templates;

pub use providers::*;
pub use templates::*;

use crate::routes::metadata;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::routing::get;
use axum::{Json, Router};
use domain::catalog::{CatalogCommand, CatalogError};
use serde::{Deserialize, Serialize};
use store::CommandError;

/// What a catalog command can fail with.
type CatalogCommandError = CommandError<CatalogError>;
use time::OffsetDateTime;
use utoipa::{IntoParams, ToSchema};

use crate::{ApiError, AppState};

pub fn router() -> Router<AppState> {
    Router::new()
        .merge(providers::router())
        .merge(templates::router())
        .route("/admin/catalog/events", get(list_catalog_events))
}

/// A new order: every id, each once, first first.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OrderIn {
    pub ids: Vec<String>,
}

/// One event of the catalog's audit history.
#[derive(Debug, Serialize, ToSchema)]
pub struct CatalogEventOut {
    /// 1, 2, 3, ... without gaps.
    pub sequence: u64,
    /// The event name, e.g. `SeedImported`, `ProviderCreated`, `TemplateUpdated`,
    /// `TemplateEnabledChanged`, `ProvidersReordered`.
    #[serde(rename = "type")]
    pub event_type: String,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub recorded_at: OffsetDateTime,
    /// Who made the change: `admin` for API calls.
    pub actor: Option<String>,
    /// The event's fields; updates hold only the fields that changed.
    #[schema(value_type = Object)]
    pub data: serde_json::Value,
}

#[derive(Debug, Deserialize, IntoParams)]
pub struct CatalogEventsQuery {
    /// Only events with a higher sequence.
    pub after: Option<u64>,
    /// At most this many (default and maximum 10000).
    pub limit: Option<i64>,
}

/// The catalog's audit history in order: every change to providers and templates.
#[utoipa::path(get, path = "/api/v1/admin/catalog/events", tag = "admin",
    security(("bearer" = [])),
    params(CatalogEventsQuery),
    responses((status = 200, body = [CatalogEventOut]), (status = 401, body = crate::error::ErrorBody)))]
pub async fn list_catalog_events(
    State(state): State<AppState>,
    Query(query): Query<CatalogEventsQuery>,
) -> Result<Json<Vec<CatalogEventOut>>, ApiError> {
    let limit = query.limit.unwrap_or(10_000).clamp(1, 10_000);
    let events =
        store::catalog::catalog_events(&state.pool, query.after.unwrap_or(0), limit).await?;
    Ok(Json(
        events
            .into_iter()
            .map(|e| CatalogEventOut {
                sequence: e.sequence,
                event_type: e.event_type,
                recorded_at: e.recorded_at,
                actor: e.actor,
                data: e.data,
            })
            .collect(),
    ))
}

/// The body, or a 422 naming what is wrong with it (a 400 if it is not JSON at all).
fn body<T>(body: Result<Json<T>, JsonRejection>) -> Result<T, ApiError> {
    body.map(|Json(b)| b).map_err(|e| match e {
        JsonRejection::JsonDataError(e) => ApiError::Invalid {
            field: "body".into(),
            reason: e.body_text(),
        },
        other => ApiError::BadRequest(other.body_text()),
    })
}

fn invalid(field: &str, reason: impl Into<String>) -> ApiError {
    ApiError::Invalid {
        field: field.into(),
        reason: reason.into(),
    }
}

/// Executes `commands` in order as the admin, all or nothing.
async fn execute(
    state: &AppState,
    headers: &HeaderMap,
    commands: Vec<CatalogCommand>,
) -> Result<(), CatalogCommandError> {
    store::catalog::execute(&state.pool, commands, &metadata(headers)).await?;
    Ok(())
}

/// How a refused command is answered: unknown ids 404, duplicates 409, invalid fields 422.
fn refused(e: CatalogCommandError) -> ApiError {
    match e {
        CatalogCommandError::Rejected(e) => match e {
            CatalogError::UnknownProvider(_) | CatalogError::UnknownTemplate(..) => {
                ApiError::NotFound(e.to_string())
            }
            CatalogError::DuplicateProvider(_) | CatalogError::DuplicateTemplate(..) => {
                ApiError::Conflict(e.to_string())
            }
            CatalogError::Invalid(e) => e.into(),
        },
        CatalogCommandError::Conflict => ApiError::Conflict(e.to_string()),
        CatalogCommandError::Store(_) => ApiError::internal(e),
    }
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
