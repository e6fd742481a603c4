//! `/api/v1/audit`: every event of the platform in commit order, filtered, a page at a time
//! or exported whole as NDJSON.

use axum::body::{Body, Bytes};
use axum::extract::{Query, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use domain::provisioning::{ProviderId, VmId};
use futures::StreamExt;
use serde::Serialize;
use store::audit::{AuditEntry, AuditError, AuditFilter, Start};
use time::OffsetDateTime;
use utoipa::{IntoParams, ToSchema};

use crate::auth::Principal;
use crate::routes::events::limit;
use crate::{ApiError, AppState};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/audit", get(list_audit))
        .route("/audit/export", get(export_audit))
}

/// The filters of the audit history (and of a VM's history, but `vm` and `provider`).
#[allow(dead_code)] // documents the parameters; they are read from the raw query
#[derive(Debug, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AuditQuery {
    /// Only events after the event at this position: the `next` of the previous page.
    #[param(minimum = 0)]
    after: Option<i64>,
    /// At most this many (default and maximum 10000).
    #[param(minimum = 1, maximum = 10000)]
    limit: Option<i64>,
    /// Only events caused by this actor (`admin`, `runner`, `expiry`, ...).
    #[param(min_length = 1, pattern = r"^[^\u0000]*$")]
    actor: Option<String>,
    /// Only events of this type (`Requested`, `Failed`, ...); repeat it for several.
    #[param(rename = "type", explode, style = Form, value_type = Option<Vec<crate::routes::schemas::EventType>>)]
    event_type: Option<Vec<String>>,
    /// Only the events of this VM.
    #[param(value_type = Option<uuid::Uuid>)]
    vm: Option<String>,
    /// Only the events of VMs requested on this provider.
    #[param(min_length = 1, max_length = 64, pattern = r"^[a-z0-9._-]+$")]
    provider: Option<String>,
    /// Only events recorded at or after this time (RFC 3339).
    #[param(value_type = Option<crate::routes::schemas::Time>)]
    from: Option<String>,
    /// Only events recorded before this time (RFC 3339), not before `from`.
    #[param(value_type = Option<crate::routes::schemas::Time>)]
    to: Option<String>,
    /// `true`: leave Terraform's lines (`LogLine`) out.
    exclude_logs: Option<bool>,
}

/// One event of the platform, as stored.
#[derive(Debug, Serialize, ToSchema)]
pub struct AuditEventOut {
    /// Its place in the events table: pass the last one you have as `after`.
    pub position: i64,
    /// `Provisioning` (a VM) or `Catalog`.
    pub aggregate_type: String,
    /// The VM's id, or `catalog`.
    pub aggregate_id: String,
    /// 1, 2, 3, ... within its aggregate.
    pub sequence: i64,
    #[serde(rename = "type")]
    pub event_type: String,
    /// The schema version it was stored in (`1.0`, ...); it is read through the upcasters
    /// of `store::upcast` into today's type.
    pub version: String,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub recorded_at: OffsetDateTime,
    pub actor: Option<String>,
    /// The id of the request that caused it.
    pub correlation_id: Option<String>,
    #[schema(value_type = Object)]
    pub data: serde_json::Value,
}

impl From<AuditEntry> for AuditEventOut {
    fn from(e: AuditEntry) -> Self {
        AuditEventOut {
            position: e.position,
            aggregate_type: e.aggregate_type,
            aggregate_id: e.aggregate_id,
            sequence: e.sequence,
            event_type: e.event_type,
            version: e.event_version,
            recorded_at: e.recorded_at,
            actor: e.actor,
            correlation_id: e.correlation_id,
            data: e.data,
        }
    }
}

/// A page of the audit history.
#[derive(Debug, Serialize, ToSchema)]
pub struct AuditPage {
    /// In commit order.
    pub items: Vec<AuditEventOut>,
    /// The position of the last item: pass it as `after` for the next page (`null` when
    /// the page is empty; a page shorter than `limit` is the last for now).
    pub next: Option<i64>,
}

/// Every event of the platform in commit order (admins).
#[utoipa::path(get, path = "/api/v1/audit", tag = "admin",
    security(("bearer" = [])),
    params(AuditQuery),
    responses(
        (status = 200, body = AuditPage),
        (status = 401, body = crate::error::ErrorBody),
        (status = 422, description = "A parameter is invalid (`detail` names it)", body = crate::error::ErrorBody),
    ))]
pub async fn list_audit(
    State(state): State<AppState>,
    Query(params): Query<Vec<(String, String)>>,
) -> Result<Json<AuditPage>, ApiError> {
    let query = audit_query(&params, true)?;
    let horizon = store::feed::horizon(&state.app.pool).await?;
    let start = Start::Position(query.after);
    let rows = store::audit::page(&state.app.pool, &query.filter, start, horizon, query.limit)
        .await
        .map_err(audit_error)?;
    let next = rows.last().map(|e| e.position);
    Ok(Json(AuditPage {
        items: rows.into_iter().map(AuditEventOut::from).collect(),
        next,
    }))
}

/// Rows an export reads at a time.
const EXPORT_PAGE: i64 = 1000;

/// Every event the filters select, one JSON object (an `AuditEventOut`) per line, streamed:
/// the selection is read a page at a time as the client reads, up to the events committed
/// when the export began. `limit` is ignored. An export counts among the caller's 16 open
/// streams and exports (429 past them), and is cut when the server shuts down.
#[utoipa::path(get, path = "/api/v1/audit/export", tag = "admin",
    security(("bearer" = [])),
    params(AuditQuery),
    responses(
        (status = 200, description = "NDJSON of AuditEventOut", content_type = "application/x-ndjson"),
        (status = 401, body = crate::error::ErrorBody),
        (status = 422, description = "A parameter is invalid (`detail` names it)", body = crate::error::ErrorBody),
    ))]
pub async fn export_audit(
    State(state): State<AppState>,
    principal: Principal,
    Query(params): Query<Vec<(String, String)>>,
) -> Result<Response, ApiError> {
    let query = audit_query(&params, true)?;
    let slot = state.slots.take(principal.user)?;
    let horizon = store::feed::horizon(&state.app.pool).await?;
    // The start is checked now, so a wrong one is a 422 rather than a cut stream.
    let first = store::audit::page(
        &state.app.pool,
        &query.filter,
        Start::Position(query.after),
        horizon,
        EXPORT_PAGE,
    )
    .await
    .map_err(audit_error)?;
    let pool = state.app.pool.clone();
    let filter = query.filter;
    let pages = futures::stream::unfold(Some(first), move |page| {
        let (pool, filter) = (pool.clone(), filter.clone());
        async move {
            let rows = page?;
            let last = rows.last()?.position;
            let mut body = Vec::with_capacity(rows.len() * 256);
            for row in rows {
                serde_json::to_writer(&mut body, &AuditEventOut::from(row))
                    .expect("plain data serializes");
                body.push(b'\n');
            }
            let next = match store::audit::page(
                &pool,
                &filter,
                Start::Position(last),
                horizon,
                EXPORT_PAGE,
            )
            .await
            {
                Ok(rows) => Some(rows),
                Err(error) => {
                    // The client sees a cut stream (no final newline of a last page).
                    tracing::warn!(%error, "the export could not read its next page");
                    None
                }
            };
            Some((Ok::<_, std::io::Error>(Bytes::from(body)), next))
        }
    });
    // Cut at shutdown, as the streams are, so that the server's graceful shutdown does not
    // wait for a slow reader; the slot is held until the body is dropped.
    let pages = pages
        .take_until(state.stopping.clone().cancelled_owned())
        .map(move |page| {
            let _ = &slot;
            page
        });
    Ok((
        [(header::CONTENT_TYPE, "application/x-ndjson")],
        Body::from_stream(pages),
    )
        .into_response())
}

/// An audit query's parameters, the first wrong one named.
pub(crate) struct ParsedQuery {
    pub filter: AuditFilter,
    pub after: i64,
    pub limit: i64,
}

/// Reads the audit parameters; `platform`: the audit route's (with `vm` and `provider`),
/// else a VM's history's (whose `after` is a sequence, read by the caller).
pub(crate) fn audit_query(
    params: &[(String, String)],
    platform: bool,
) -> Result<ParsedQuery, ApiError> {
    let invalid = |field: &str, reason: &str| ApiError::Invalid {
        field: field.into(),
        reason: reason.into(),
    };
    let time = crate::timestamps::parse;
    let mut query = ParsedQuery {
        filter: AuditFilter::default(),
        after: 0,
        limit: limit(None),
    };
    for (name, value) in params {
        match name.as_str() {
            "after" if platform => {
                query.after = value
                    .parse::<i64>()
                    .ok()
                    .filter(|p| *p >= 0)
                    .ok_or_else(|| invalid("after", "must be the position of an event"))?;
            }
            "after" => {}
            "limit" => {
                query.limit = value
                    .parse::<i64>()
                    .ok()
                    .filter(|n| (1..=10_000).contains(n))
                    .ok_or_else(|| invalid("limit", "must be a number from 1 to 10000"))?;
            }
            "actor" if !value.is_empty() => query.filter.actor = Some(value.clone()),
            "actor" => return Err(invalid("actor", "must not be empty")),
            "type" => {
                let name_like = value.len() <= 64
                    && value.starts_with(|c: char| c.is_ascii_uppercase())
                    && value.chars().all(|c| c.is_ascii_alphanumeric());
                if !name_like {
                    return Err(invalid("type", "must be an event type, e.g. Failed"));
                }
                query.filter.types.push(value.clone());
            }
            "vm" if platform => {
                let vm = value
                    .parse::<VmId>()
                    .map_err(|_| invalid("vm", "must be a VM id"))?;
                query.filter.vm = Some(vm);
            }
            "provider" if platform => {
                let provider = ProviderId::parse(value)
                    .map_err(|_| invalid("provider", "must be a provider id"))?;
                query.filter.provider = Some(provider);
            }
            "from" => query.filter.from = Some(time("from", value)?),
            "to" => query.filter.to = Some(time("to", value)?),
            "exclude_logs" => {
                query.filter.exclude_logs = match value.as_str() {
                    "true" => true,
                    "false" => false,
                    _ => return Err(invalid("exclude_logs", "must be true or false")),
                }
            }
            // Read by the layer that waits for the read models.
            "min_position" => {}
            other => {
                let known = match platform {
                    true => "after, limit, actor, type, vm, provider, from, to, exclude_logs",
                    false => "after, limit, actor, type, from, to, exclude_logs",
                };
                return Err(invalid(
                    other,
                    &format!("is not a parameter of this history ({known})"),
                ));
            }
        }
    }
    if let (Some(from), Some(to)) = (query.filter.from, query.filter.to) {
        if from > to {
            return Err(invalid("to", "must not be before from"));
        }
    }
    Ok(query)
}

pub(crate) fn audit_error(e: AuditError) -> ApiError {
    match e {
        AuditError::UnknownPosition(p) => ApiError::Invalid {
            field: "after".into(),
            reason: p.to_string(),
        },
        AuditError::Database(e) => e.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(query: &[(&str, &str)]) -> Vec<(String, String)> {
        query
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn types_repeat_and_every_filter_is_read() {
        let q = audit_query(
            &params(&[
                ("type", "Requested"),
                ("type", "Failed"),
                ("actor", "runner"),
                ("provider", "local"),
                ("from", "2026-01-01T00:00:00Z"),
                ("to", "2026-02-01T00:00:00Z"),
                ("exclude_logs", "true"),
                ("after", "42"),
                ("limit", "5"),
            ]),
            true,
        )
        .unwrap();
        assert_eq!(q.filter.types, ["Requested", "Failed"]);
        assert_eq!(q.filter.actor.as_deref(), Some("runner"));
        assert!(q.filter.exclude_logs);
        assert_eq!((q.after, q.limit), (42, 5));
    }

    #[test]
    fn wrong_parameters_are_named() {
        for (query, field) in [
            (("after", "-1"), "after"),
            (("after", "x"), "after"),
            (("limit", "0"), "limit"),
            (("type", "drop table"), "type"),
            (("vm", "nope"), "vm"),
            (("from", "yesterday"), "from"),
            (("to", "2026-13-01T00:00:00Z"), "to"),
            (("from", "9999-12-31T23:59:59-00:01"), "from"),
            (("exclude_logs", "yes"), "exclude_logs"),
            (("colour", "red"), "colour"),
        ] {
            let err = audit_query(&params(&[query]), true).err().unwrap();
            assert!(err.to_string().starts_with(&format!("{field}: ")), "{err}");
        }
        let err = audit_query(&params(&[("vm", "x")]), false).err().unwrap();
        assert!(err.to_string().starts_with("vm: "), "{err}");
    }
}
