use axum::extract::{Path, Query, State};
use axum::http::HeaderValue;
use axum::response::{IntoResponse, Response};
use axum::Json;
use domain::provisioning::{VmId, VmStatus};
use serde::{Deserialize, Serialize};
use store::as_of::At;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use super::{parse_id, vm_out, DriftOut, VmOut};
use crate::auth::Principal;
use crate::{ApiError, AppState};

/// How many VMs a page has unless `limit` says otherwise, and at most.
const DEFAULT_LIMIT: i64 = 100;
const MAX_LIMIT: i64 = 1000;

/// A page of VMs.
#[derive(Debug, Serialize, ToSchema)]
pub struct VmPage {
    /// Newest first (by `created_at`, then `id`).
    pub items: Vec<VmOut>,
    /// Pass it as `after` for the next page; `null` on the last page.
    pub next: Option<String>,
}

/// A status `GET /api/v1/vms?status=` takes (see `VmStatus::SHOWN`).
#[derive(ToSchema)]
#[schema(rename_all = "snake_case")]
#[allow(dead_code)] // documents the values; `list_filter` parses them
pub enum VmStatusName {
    Requested,
    Provisioning,
    Provisioned,
    Initializing,
    Running,
    Unreachable,
    Failed,
    DestroyRequested,
    Destroying,
    Destroyed,
}

/// Which VMs `GET /api/v1/vms?archived=` shows.
#[derive(ToSchema)]
#[schema(rename_all = "lowercase")]
#[allow(dead_code)] // documents the values; `list_filter` parses them
pub enum Archived {
    False,
    True,
    All,
}

/// The VMs, newest first, a page at a time. Archived VMs are left out unless
/// `archived=true` (only them) or `archived=all`.
#[utoipa::path(get, path = "/api/v1/vms", tag = "vms",
    security(("bearer" = [])),
    params(
        ("status" = Option<Vec<VmStatusName>>, Query, explode, style = Form, description = "Only VMs with this status; repeat it or separate statuses by commas (`status=failed,destroyed`)"),
        ("provider" = Option<String>, Query, pattern = r"^[^\u0000]*$", description = "Only VMs of this provider"),
        ("archived" = Option<Archived>, Query, description = "`false` (the default): not archived; `true`: only archived; `all`: both"),
        ("after" = Option<String>, Query, pattern = r"^-?[0-9]{1,17}_[0-9a-fA-F]{32}$", description = "The `next` of the previous page"),
        ("limit" = Option<i64>, Query, minimum = 1, maximum = 1000, description = "VMs per page, 1 to 1000 (100 by default)"),
    ),
    responses(
        (status = 200, body = VmPage),
        (status = 401, body = crate::error::ErrorBody),
        (status = 422, description = "A parameter is invalid (`detail` names it)", body = crate::error::ErrorBody),
    ))]
pub async fn list_vms(
    State(state): State<AppState>,
    principal: Principal,
    Query(params): Query<Vec<(String, String)>>,
) -> Result<Json<VmPage>, ApiError> {
    let mut filter = list_filter(&params)?;
    // Users list their own VMs; admins everyone's.
    filter.owner = (!principal.is_admin()).then_some(principal.user);
    let limit = filter.limit;
    // One more than asked: whether a next page exists, without a second query.
    filter.limit += 1;
    let mut rows = store::views::list(&state.app.pool, &filter).await?;
    let next = match rows.len() as i64 > limit {
        true => {
            rows.truncate(limit as usize);
            rows.last().map(|last| cursor(last.created_at, last.id))
        }
        false => None,
    };
    Ok(Json(VmPage {
        items: rows.into_iter().map(VmOut::from).collect(),
        next,
    }))
}

/// The list's query parameters; the first one wrong is named.
fn list_filter(params: &[(String, String)]) -> Result<store::views::ListFilter, ApiError> {
    let invalid = |field: &str, reason: String| ApiError::Invalid {
        field: field.into(),
        reason,
    };
    let mut filter = store::views::ListFilter {
        archived: Some(false),
        limit: DEFAULT_LIMIT,
        ..Default::default()
    };
    for (name, value) in params {
        match name.as_str() {
            "status" => {
                for status in value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                    let known = VmStatus::parse(status).ok_or_else(|| {
                        let all: Vec<&str> = VmStatus::SHOWN.iter().map(|s| s.as_str()).collect();
                        invalid(
                            "status",
                            format!("{status:?} is not a status; one of {}", all.join(", ")),
                        )
                    })?;
                    filter.statuses.push(known.as_str().to_owned());
                }
            }
            "provider" => filter.provider = Some(value.clone()),
            "archived" => {
                filter.archived = match value.as_str() {
                    "false" => Some(false),
                    "true" => Some(true),
                    "all" => None,
                    _ => return Err(invalid("archived", "must be false, true or all".into())),
                }
            }
            "after" => {
                let after = parse_cursor(value).ok_or_else(|| {
                    invalid(
                        "after",
                        "is not a cursor: pass the `next` of the previous page".into(),
                    )
                })?;
                filter.after = Some(after);
            }
            "limit" => {
                filter.limit = value
                    .parse::<i64>()
                    .ok()
                    .filter(|n| (1..=MAX_LIMIT).contains(n))
                    .ok_or_else(|| {
                        invalid("limit", format!("must be a number from 1 to {MAX_LIMIT}"))
                    })?;
            }
            // Read by the layer that waits for the read models (`min_position`).
            "min_position" => {}
            other => {
                return Err(invalid(
                    other,
                    "is not a parameter of this list (status, provider, archived, after, limit)"
                        .into(),
                ))
            }
        }
    }
    Ok(filter)
}

/// Where a page ends: the last VM's creation time (in microseconds, as Postgres keeps it)
/// and id. Opaque to clients.
pub(crate) fn cursor(created_at: OffsetDateTime, id: Uuid) -> String {
    let micros = created_at.unix_timestamp_nanos() / 1000;
    format!("{micros}_{}", id.simple())
}

pub(crate) fn parse_cursor(cursor: &str) -> Option<(OffsetDateTime, Uuid)> {
    let (micros, id) = cursor.split_once('_')?;
    let micros: i128 = micros.parse().ok()?;
    let at = OffsetDateTime::from_unix_timestamp_nanos(micros.checked_mul(1000)?).ok()?;
    // A time Postgres cannot store is no cursor it made.
    let at = crate::timestamps::in_range(at)?;
    Some((at, Uuid::try_parse(id).ok()?))
}

/// `GET /api/v1/vms/{id}`'s query.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct GetVmQuery {
    /// The VM as it was then: a position in the events table, or an RFC 3339 time. The
    /// answer is folded from the VM's events up to there; its `at_position` (and the
    /// `Provisioning-Position` header) is the position of the last of them.
    #[param(value_type = Option<crate::routes::schemas::At>)]
    pub at: Option<String>,
}

/// One VM: as the read model shows it, or with `at` as it was at a past position or time.
#[utoipa::path(get, path = "/api/v1/vms/{id}", tag = "vms",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "VM id"), GetVmQuery),
    responses((status = 200, body = VmOut),
        (status = 400, description = "`at` is neither a position nor a time", body = crate::error::ErrorBody),
        (status = 422, description = "`at` is a time Postgres cannot store (before 4714-11-24 BC or after 9999 UTC)", body = crate::error::ErrorBody),
        (status = 404, description = "No such VM (at that point)", body = crate::error::ErrorBody)))]
#[tracing::instrument(skip_all, fields(vm_id = %id))]
pub async fn get_vm(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Query(query): Query<GetVmQuery>,
) -> Result<Response, ApiError> {
    let vm = parse_id(&id)?;
    if let Some(at) = &query.at {
        return get_vm_at(&state, vm, parse_at(at)?).await;
    }
    let row = store::views::get(&state.app.pool, vm)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no VM {vm}")))?;
    Ok(Json(VmOut::from(row)).into_response())
}

/// A position (digits) or an RFC 3339 time.
pub(crate) fn parse_at(at: &str) -> Result<At, ApiError> {
    if let Ok(position) = at.parse::<i64>() {
        if position >= 0 {
            return Ok(At::Position(position));
        }
    }
    let time = OffsetDateTime::parse(at, &Rfc3339).map_err(|_| {
        ApiError::BadRequest(
            "at: must be a position (a number) or an RFC 3339 time, e.g. 2026-01-31T12:00:00Z"
                .into(),
        )
    })?;
    crate::timestamps::in_range(time)
        .map(At::Time)
        .ok_or_else(|| crate::timestamps::out_of_range("at"))
}

async fn get_vm_at(state: &AppState, vm: VmId, at: At) -> Result<Response, ApiError> {
    let then = store::as_of::vm_as_of(&state.app.pool, vm, at)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no VM {vm} at that point")))?;
    let spec = then
        .view
        .spec
        .as_ref()
        .expect("vm_as_of answers requested VMs only");
    let mut out = vm_out(
        vm,
        spec,
        &then.view.lifecycle,
        then.created_at,
        then.updated_at,
    );
    out.archived = then.view.archived;
    out.drift = then.view.drift.as_ref().map(DriftOut::from);
    out.at_position = Some(then.position);
    let position = HeaderValue::from(then.position);
    Ok(([("provisioning-position", position)], Json(out)).into_response())
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
    fn a_cursor_reads_back_as_the_vm_it_was_made_of() {
        let at = OffsetDateTime::from_unix_timestamp_nanos(1_733_238_000_123_456_000).unwrap();
        let id = Uuid::new_v4();
        assert_eq!(parse_cursor(&cursor(at, id)), Some((at, id)));
        let before_postgres = format!("-300000000000000000_{}", id.simple());
        for wrong in [
            "",
            "12",
            "x_y",
            "12_notauuid",
            &format!("_{id}"),
            &before_postgres,
        ] {
            assert_eq!(parse_cursor(wrong), None, "{wrong:?}");
        }
    }

    #[test]
    fn at_is_a_position_or_a_time() {
        assert_eq!(parse_at("42").unwrap(), At::Position(42));
        let t = OffsetDateTime::parse("2026-01-31T12:00:00Z", &Rfc3339).unwrap();
        assert_eq!(parse_at("2026-01-31T12:00:00Z").unwrap(), At::Time(t));
        for wrong in ["", "-1", "yesterday", "2026-01-31"] {
            assert!(parse_at(wrong).unwrap_err().to_string().starts_with("at: "));
        }
        let too_late = parse_at("9999-12-31T23:59:59-00:01").unwrap_err();
        assert!(matches!(&too_late, ApiError::Invalid { field, .. } if field == "at"));
    }

    #[test]
    fn statuses_may_be_repeated_or_comma_separated() {
        let filter = list_filter(&params(&[
            ("status", "failed,destroyed"),
            ("status", "requested"),
        ]))
        .unwrap();
        assert_eq!(filter.statuses, ["failed", "destroyed", "requested"]);
        assert_eq!(filter.archived, Some(false));
        assert_eq!(filter.limit, DEFAULT_LIMIT);
    }

    #[test]
    fn wrong_parameters_are_named() {
        for (query, field) in [
            (("status", "gone"), "status"),
            (("limit", "0"), "limit"),
            (("limit", "1001"), "limit"),
            (("after", "nope"), "after"),
            (("archived", "maybe"), "archived"),
            (("colour", "red"), "colour"),
        ] {
            let err = list_filter(&params(&[query])).unwrap_err();
            assert!(err.to_string().starts_with(&format!("{field}: ")), "{err}");
        }
    }
}
