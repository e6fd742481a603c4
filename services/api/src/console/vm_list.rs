//! The VM list: the caller's VMs (an admin's: everyone's, with owners), newest first, not
//! archived, a page at a time. Filters (status, provider, name contains, and for admins the
//! owner's email) are the query of a plain `GET` form, kept in the URL and in the "next"
//! link, which carries the API's cursor (`after`). Read from the same read model as
//! `GET /api/v1/vms`.

use std::collections::HashMap;

use askama::Template;
use axum::extract::State;
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::response::Response;
use domain::provisioning::VmStatus;

use super::form::Fields;
use super::session::{sign_in_required, signed_in};
use super::vms::{emails, VmLine};
use super::{page, Layout};
use crate::routes::vms::{cursor, parse_cursor};
use crate::{ApiError, AppState};

/// How many VMs a page shows unless `limit` says otherwise (1 to [`MAX_PAGE`]).
const PAGE: i64 = 50;
const MAX_PAGE: i64 = 500;

/// The filters as typed (all blank: every VM).
#[derive(Default)]
struct Filters {
    status: String,
    provider: String,
    name: String,
    owner: String,
    /// VMs per page, when not the default.
    limit: String,
}

impl Filters {
    fn of(query: &Fields, admin: bool) -> Self {
        Filters {
            status: query.get("status").to_owned(),
            provider: query.get("provider").to_owned(),
            name: query.get("name").to_owned(),
            owner: if admin {
                query.get("owner").to_owned()
            } else {
                String::new()
            },
            limit: query.get("limit").to_owned(),
        }
    }

    /// VMs per page: `limit` when it is one, else the default.
    fn per_page(&self) -> i64 {
        self.limit
            .parse()
            .ok()
            .filter(|n| (1..=MAX_PAGE).contains(n))
            .unwrap_or(PAGE)
    }

    /// The filters and page size as a query string (blanks left out), for a link.
    fn query(&self) -> String {
        let mut query = url::form_urlencoded::Serializer::new(String::new());
        for (name, value) in [
            ("status", &self.status),
            ("provider", &self.provider),
            ("name", &self.name),
            ("owner", &self.owner),
            ("limit", &self.limit),
        ] {
            if !value.is_empty() {
                query.append_pair(name, value);
            }
        }
        query.finish()
    }

    /// Whether a filter is set.
    fn any(&self) -> bool {
        [&self.status, &self.provider, &self.name, &self.owner]
            .iter()
            .any(|f| !f.is_empty())
    }
}

#[derive(Template)]
#[template(path = "console/vms.html")]
struct VmsPage {
    layout: Layout,
    vms: Vec<VmLine>,
    filters: Filters,
    statuses: Vec<&'static str>,
    providers: Vec<String>,
    /// The next page's URL, when there is one.
    next: Option<String>,
    /// Whether this is a later page than the first.
    later: bool,
    /// Why the filters show nothing, when one cannot be met.
    unmet: Option<String>,
}

/// `GET /console` and `GET /console/vms`: `?status=&provider=&name=&owner=&limit=&after=`.
#[tracing::instrument(skip_all)]
pub(crate) async fn list_vms(
    State(state): State<AppState>,
    parts: Parts,
) -> Result<Response, ApiError> {
    let Some(principal) = signed_in(&state, &parts).await? else {
        return Ok(sign_in_required(&state, &parts));
    };
    let admin = principal.is_admin();
    let query = Fields::parse(parts.uri.query().unwrap_or("").as_bytes());
    let filters = Filters::of(&query, admin);
    let mut unmet = None;
    let per_page = filters.per_page();
    let mut filter = store::views::ListFilter {
        archived: Some(false),
        // One more than shown: whether a next page exists.
        limit: per_page + 1,
        // Users list their own VMs; admins everyone's.
        owner: (!admin).then_some(principal.user),
        provider: Some(filters.provider.clone()).filter(|p| !p.is_empty()),
        name_contains: Some(filters.name.clone()).filter(|n| !n.is_empty()),
        after: parse_cursor(query.get("after")),
        ..Default::default()
    };
    match VmStatus::parse(&filters.status) {
        Some(status) => filter.statuses.push(status.as_str().to_owned()),
        None if filters.status.is_empty() => {}
        None => unmet = Some(format!("{:?} is not a status.", filters.status)),
    }
    if !filters.owner.is_empty() {
        let owner = store::users::by_email(&state.app.pool, &filters.owner)
            .await
            .map_err(crate::error::store_failed)?;
        match owner {
            Some(user) => filter.owner = Some(user.id),
            None => unmet = Some(format!("No user has the email {}.", filters.owner)),
        }
    }
    let mut rows = match unmet {
        Some(_) => vec![],
        None => store::views::list(&state.app.pool, &filter).await?,
    };
    let next = match rows.len() as i64 > per_page {
        true => {
            rows.truncate(per_page as usize);
            rows.last().map(|last| {
                let filters = filters.query();
                let after = cursor(last.created_at, last.id);
                match filters.is_empty() {
                    true => format!("/console/vms?after={after}"),
                    false => format!("/console/vms?{filters}&after={after}"),
                }
            })
        }
        false => None,
    };
    let owners = match admin {
        true => emails(&state, rows.iter().map(|r| r.owner)).await?,
        false => HashMap::new(),
    };
    let providers = store::catalog::all_providers(&state.app.pool)
        .await?
        .into_iter()
        .map(|p| p.id)
        .collect();
    Ok(page(
        StatusCode::OK,
        &VmsPage {
            layout: Layout::of(&principal),
            vms: rows.iter().map(|row| VmLine::of(row, &owners)).collect(),
            filters,
            statuses: VmStatus::SHOWN.iter().map(|s| s.as_str()).collect(),
            providers,
            next,
            later: filter.after.is_some(),
            unmet,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filters_are_kept_in_the_link_without_blanks() {
        let query = Fields::parse(b"status=running&provider=&name=web+1&owner=a%40b.test&limit=");
        let filters = Filters::of(&query, true);
        assert_eq!(
            filters.query(),
            "status=running&name=web+1&owner=a%40b.test"
        );
        assert!(filters.any());
        let as_user = Filters::of(&query, false);
        assert_eq!(as_user.query(), "status=running&name=web+1");
        assert!(!Filters::default().any());
        let paged = Filters::of(&Fields::parse(b"limit=2"), false);
        assert_eq!(
            (paged.query().as_str(), paged.any(), paged.per_page()),
            ("limit=2", false, 2)
        );
        assert_eq!(
            Filters::of(&Fields::parse(b"limit=0"), false).per_page(),
            PAGE
        );
    }
}
