use axum::extract::{Path, Query, State};
use axum::Json;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use utoipa::{IntoParams, ToSchema};

use super::parse_id;
use crate::routes::admin::{audit_error, audit_query};
use crate::routes::events::{limit, EventOut};
use crate::routes::schemas::{EventType, Time};
use crate::{ApiError, AppState};

/// The VM's audit history in order, Terraform's lines included unless `exclude_logs=true`.
/// Pages by the VM's sequence (`after`); filters as `GET /api/v1/audit` (but `vm` and
/// `provider`).
#[utoipa::path(get, path = "/api/v1/vms/{id}/events", tag = "vms",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "VM id"),
        ("after" = Option<u64>, Query, maximum = 9223372036854775807_u64, description = "Only events with a higher sequence"),
        ("limit" = Option<i64>, Query, minimum = 1, maximum = 10000, description = "At most this many (default and maximum 10000)"),
        ("actor" = Option<String>, Query, min_length = 1, pattern = r"^[^\u0000]*$", description = "Only events caused by this actor"),
        ("type" = Option<Vec<EventType>>, Query, explode, style = Form, description = "Only events of this type; repeat it for several"),
        ("from" = Option<Time>, Query, description = "Only events recorded at or after this time (RFC 3339)"),
        ("to" = Option<Time>, Query, description = "Only events recorded before this time (RFC 3339), not before `from`"),
        ("exclude_logs" = Option<bool>, Query, description = "`true`: leave `LogLine` events out"),
    ),
    responses((status = 200, body = [EventOut]), (status = 404, body = crate::error::ErrorBody),
        (status = 422, description = "A parameter is invalid (`detail` names it)", body = crate::error::ErrorBody)))]
#[tracing::instrument(skip_all, fields(vm_id = %id))]
pub async fn list_vm_events(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Query(params): Query<Vec<(String, String)>>,
) -> Result<Json<Vec<EventOut>>, ApiError> {
    let vm = parse_id(&id)?;
    let mut query = audit_query(&params, false)?;
    let after = sequence_after(&params)?;
    if store::last_sequence(&state.app.pool, vm).await? == 0 {
        return Err(ApiError::NotFound(format!("no VM {vm}")));
    }
    query.filter.vm = Some(vm);
    let horizon = store::feed::horizon(&state.app.pool).await?;
    let start = store::audit::Start::Sequence(after);
    let events = store::audit::page(&state.app.pool, &query.filter, start, horizon, query.limit)
        .await
        .map_err(audit_error)?;
    Ok(Json(events.into_iter().map(EventOut::from).collect()))
}

/// `after`: a sequence, as the events table keeps them (a non-negative `bigint`); 0 when
/// left out. A VM's history and a cluster's read it alike.
pub(crate) fn sequence_after(params: &[(String, String)]) -> Result<u64, ApiError> {
    let Some((_, after)) = params.iter().find(|(name, _)| name == "after") else {
        return Ok(0);
    };
    after
        .parse::<i64>()
        .ok()
        .and_then(|after| u64::try_from(after).ok())
        .ok_or_else(|| ApiError::Invalid {
            field: "after".into(),
            reason: "must be the sequence of an event: 0 or more".into(),
        })
}

/// One line Terraform printed.
#[derive(Debug, Serialize, ToSchema)]
pub struct LogOut {
    pub job_id: i32,
    /// 1, 2, 3, ... within the job.
    pub line: i32,
    /// Terraform's `@level`: `info`, `warn`, `error`.
    pub level: String,
    /// Terraform's `@message`, or the whole line when it was not JSON.
    pub message: String,
    /// Terraform's message `type` (e.g. `apply_complete`, `diagnostic`), `plain` for
    /// non-JSON output, `stderr` for standard error.
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub recorded_at: OffsetDateTime,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LogsQuery {
    /// With `after_line`: only lines after this job's line (the last line you have).
    pub after_job: Option<i32>,
    pub after_line: Option<i32>,
    /// At most this many (default and maximum 10000).
    pub limit: Option<i64>,
}

/// The Terraform output of the VM's jobs, in order; page with `after_job` and `after_line`.
#[utoipa::path(get, path = "/api/v1/vms/{id}/logs", tag = "vms",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "VM id"), LogsQuery),
    responses((status = 200, body = [LogOut]), (status = 404, body = crate::error::ErrorBody)))]
#[tracing::instrument(skip_all, fields(vm_id = %id))]
pub async fn list_vm_logs(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Query(query): Query<LogsQuery>,
) -> Result<Json<Vec<LogOut>>, ApiError> {
    let vm = parse_id(&id)?;
    if store::views::get(&state.app.pool, vm).await?.is_none() {
        return Err(ApiError::NotFound(format!("no VM {vm}")));
    }
    let after = (query.after_job.unwrap_or(0), query.after_line.unwrap_or(0));
    let rows = store::views::logs(&state.app.pool, vm, after, limit(query.limit)).await?;
    Ok(Json(rows.into_iter().map(LogOut::from).collect()))
}

impl From<store::views::LogRow> for LogOut {
    fn from(r: store::views::LogRow) -> Self {
        LogOut {
            job_id: r.job_id,
            line: r.line,
            level: r.level,
            message: r.message,
            kind: r.kind,
            recorded_at: r.recorded_at,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn after(value: &str) -> Result<u64, String> {
        sequence_after(&[("after".to_owned(), value.to_owned())]).map_err(|e| e.to_string())
    }

    #[test]
    fn after_is_a_sequence_the_events_table_can_hold() {
        assert_eq!(after("0"), Ok(0));
        assert_eq!(after("9223372036854775807"), Ok(i64::MAX as u64));
        assert_eq!(sequence_after(&[]).ok(), Some(0));
        for wrong in ["9223372036854775808", "-1", "x", ""] {
            assert!(after(wrong).unwrap_err().starts_with("after: "), "{wrong}");
        }
    }
}
