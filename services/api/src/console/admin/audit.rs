//! The audit history, for admins: every event of the platform in commit order, filtered as
//! `GET /api/v1/audit` filters it (the same parameters, read by the same parser), a page at
//! a time; an export of the same selection as NDJSON; and the admin stream with the same
//! filters, which the page's script follows to show events as they commit.

use askama::Template;
use axum::extract::State;
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use store::audit::{AuditEntry, Start};

use super::super::{page, shown, Layout};
use super::admin_reader;
use crate::routes::admin::{audit_error, audit_query};
use crate::{ApiError, AppState};

/// Events a page shows unless the form asks for another number.
const PAGE: i64 = 50;

/// How much of an event's data the table shows before the rest is folded away.
const COMPACT: usize = 120;

pub(crate) fn router(state: AppState) -> Router<AppState> {
    Router::new()
        .route("/admin/audit", get(show_audit))
        .merge(super::audit_stream::router(state))
}

/// The fields of the form as the page shows them again.
#[derive(Default)]
struct Filters {
    actor: String,
    vm: String,
    provider: String,
    types: String,
    from: String,
    to: String,
    exclude_logs: bool,
    limit: i64,
}

struct AuditLine {
    position: i64,
    recorded: String,
    actor: String,
    event_type: String,
    /// The VM's id, for a VM's event.
    vm: Option<String>,
    /// `Catalog`, or the aggregate of another kind.
    aggregate: String,
    /// The event's data on one line, cut at [`COMPACT`] characters.
    compact: String,
    /// All of it, indented, when it was cut.
    full: Option<String>,
}

#[derive(Template)]
#[template(path = "console/admin/audit.html")]
struct AuditPage {
    layout: Layout,
    filters: Filters,
    events: Vec<AuditLine>,
    /// The next page's link, when there are more events.
    next: Option<String>,
    /// The first page's link, when this is a later one.
    first: Option<String>,
    export: String,
    /// The admin stream with the same filters, after the events committed when the page
    /// was read.
    stream: String,
    refusal: Option<String>,
}

/// `GET /console/admin/audit`: the filters as `GET /api/v1/audit` takes them (`actor`,
/// `vm`, `provider`, `type`, `from`, `to`, `exclude_logs`, `after`, `limit`); a form's
/// empty fields are left out, `type` may list several separated by commas or spaces,
/// `from` and `to` may be a form's `YYYY-MM-DDTHH:MM` (UTC), and Terraform's lines are left
/// out unless `exclude_logs=false`.
#[tracing::instrument(skip_all)]
pub(crate) async fn show_audit(
    State(state): State<AppState>,
    parts: Parts,
) -> Result<Response, ApiError> {
    let principal = match admin_reader(&state, &parts).await? {
        Ok(principal) => principal,
        Err(answer) => return Ok(answer),
    };
    let params = console_params(parts.uri.query().unwrap_or_default());
    let filters = shown_filters(&params);
    // The stream's start before the page's horizon: an event between the two is on the
    // page and sent again, and the script skips the positions it shows.
    let head = store::feed::head(&state.app.pool).await?;
    let horizon = store::feed::horizon(&state.app.pool).await?;
    let selection: Vec<(String, String)> = params
        .iter()
        .filter(|(name, _)| name != "after" && name != "limit")
        .cloned()
        .collect();
    let encoded =
        |pairs: &[(String, String)]| serde_urlencoded::to_string(pairs).unwrap_or_default();
    let filtered = encoded(&selection);
    let mut shown = AuditPage {
        layout: Layout::of(&principal),
        filters,
        events: Vec::new(),
        next: None,
        first: None,
        export: format!("/console/admin/audit/export?{filtered}"),
        stream: stream_link(&filtered, head.position),
        refusal: None,
    };
    let read = match audit_query(&params, true) {
        Ok(query) => {
            let start = Start::Position(query.after);
            // One more than shown: whether a next page exists.
            store::audit::page(
                &state.app.pool,
                &query.filter,
                start,
                horizon,
                query.limit + 1,
            )
            .await
            .map_err(audit_error)
            .map(|rows| (query, rows))
        }
        Err(e) => Err(e),
    };
    let (query, mut rows) = match read {
        Ok(read) => read,
        Err(ApiError::Invalid { field, reason }) => {
            shown.refusal = Some(format!("{field}: {reason}"));
            return Ok(page(StatusCode::UNPROCESSABLE_ENTITY, &shown));
        }
        Err(e) => return Err(e),
    };
    if rows.len() as i64 > query.limit {
        rows.truncate(query.limit as usize);
        if let Some(last) = rows.last() {
            let mut next = params.clone();
            next.retain(|(name, _)| name != "after");
            next.push(("after".into(), last.position.to_string()));
            shown.next = Some(format!("/console/admin/audit?{}", encoded(&next)));
        }
    }
    if query.after > 0 {
        let mut first = params.clone();
        first.retain(|(name, _)| name != "after");
        shown.first = Some(format!("/console/admin/audit?{}", encoded(&first)));
    }
    shown.events = rows.into_iter().map(line).collect();
    Ok(page(StatusCode::OK, &shown))
}

/// The admin stream with the page's filters, after the event at `head` (from the first
/// when there is none yet).
fn stream_link(filtered: &str, head: i64) -> String {
    let since = match head {
        0 => String::new(),
        head => format!("since={head}"),
    };
    let query: Vec<&str> = [filtered, since.as_str()]
        .into_iter()
        .filter(|part| !part.is_empty())
        .collect();
    format!("/console/streams/admin?{}", query.join("&"))
}

fn line(e: AuditEntry) -> AuditLine {
    let compact = e.data.to_string();
    let cut = compact.chars().count() > COMPACT;
    AuditLine {
        position: e.position,
        recorded: shown(e.recorded_at),
        actor: e.actor.unwrap_or_default(),
        event_type: e.event_type,
        vm: (e.aggregate_type == "Provisioning").then(|| e.aggregate_id.clone()),
        aggregate: e.aggregate_type,
        full: cut.then(|| serde_json::to_string_pretty(&e.data).unwrap_or_default()),
        compact: match cut {
            true => format!("{}…", compact.chars().take(COMPACT).collect::<String>()),
            false => compact,
        },
    }
}

/// A query of the console's form as the API's parser reads it (see [`show_audit`]).
fn console_params(query: &str) -> Vec<(String, String)> {
    let mut params = Vec::new();
    let mut exclude_logs = None;
    let mut limit = None;
    for (name, value) in url::form_urlencoded::parse(query.as_bytes()).into_owned() {
        let value = value.trim().to_owned();
        if value.is_empty() {
            continue;
        }
        match name.as_str() {
            "type" => {
                for one in value.split(|c: char| c == ',' || c.is_whitespace()) {
                    if !one.is_empty() {
                        params.push((name.clone(), one.to_owned()));
                    }
                }
            }
            "from" | "to" => params.push((name, form_time(value))),
            "exclude_logs" => exclude_logs = Some(value),
            "limit" => limit = Some(value),
            _ => params.push((name, value)),
        }
    }
    params.push((
        "exclude_logs".into(),
        exclude_logs.unwrap_or_else(|| "true".into()),
    ));
    params.push(("limit".into(), limit.unwrap_or_else(|| PAGE.to_string())));
    params
}

/// The console's query for the export and the stream: the form's empty fields out.
pub(super) fn console_query(query: &str) -> String {
    let params: Vec<(String, String)> = console_params(query)
        .into_iter()
        .filter(|(name, _)| name != "limit")
        .collect();
    serde_urlencoded::to_string(params).unwrap_or_default()
}

/// A time as a form's `datetime-local` field sends it (`2026-12-07T05:00`), taken as UTC;
/// anything else as typed, for the parser to judge.
fn form_time(value: String) -> String {
    let local = value.len() == 16
        && value.as_bytes()[10] == b'T'
        && value
            .chars()
            .enumerate()
            .all(|(i, c)| matches!(i, 4 | 7 | 10 | 13) || c.is_ascii_digit());
    match local {
        true => format!("{value}:00Z"),
        false => value,
    }
}

fn shown_filters(params: &[(String, String)]) -> Filters {
    let mut filters = Filters::default();
    let mut types = Vec::new();
    for (name, value) in params {
        match name.as_str() {
            "actor" => filters.actor = value.clone(),
            "vm" => filters.vm = value.clone(),
            "provider" => filters.provider = value.clone(),
            "type" => types.push(value.as_str()),
            "from" => filters.from = value.clone(),
            "to" => filters.to = value.clone(),
            "exclude_logs" => filters.exclude_logs = value == "true",
            "limit" => filters.limit = value.parse().unwrap_or(PAGE),
            _ => {}
        }
    }
    filters.types = types.join(", ");
    filters
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_forms_empty_fields_are_left_out_and_its_types_split() {
        let params =
            console_params("actor=&vm=&type=Requested%2C+Failed&from=2026-12-07T05%3A00&to=");
        assert_eq!(
            params,
            [
                ("type".to_owned(), "Requested".to_owned()),
                ("type".into(), "Failed".into()),
                ("from".into(), "2026-12-07T05:00:00Z".into()),
                ("exclude_logs".into(), "true".into()),
                ("limit".into(), "50".into()),
            ]
        );
        let query = audit_query(&params, true).unwrap();
        assert_eq!(query.filter.types, ["Requested", "Failed"]);
        assert!(query.filter.exclude_logs);
        let logs = console_params("exclude_logs=false&limit=5");
        assert!(!audit_query(&logs, true).unwrap().filter.exclude_logs);
        assert_eq!(
            console_query("exclude_logs=false&limit=5&actor="),
            "exclude_logs=false"
        );
    }
}
