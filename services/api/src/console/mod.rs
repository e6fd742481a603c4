//! The console: server-rendered pages under `/console` for people in a browser, the third
//! face over the application layer beside the JSON API and NAIC's. Every page reads
//! without JavaScript; the only asset is one style sheet embedded in the binary.
//!
//! The pages are not API routes: they answer HTML (a sign-in page, a 404 page) where the
//! API answers JSON, and they are left out of the OpenAPI document.

mod admin;
mod assets;
mod cluster_actions;
mod cluster_new;
mod clusters;
mod create;
mod form;
mod job;
mod keys;
mod limits;
mod live;
mod log;
mod reach;
mod session;
mod taskserv_params;
mod tokens;
mod vm_actions;
mod vm_at;
mod vm_history;
mod vm_list;
mod vms;

use askama::Template;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use time::OffsetDateTime;

use crate::auth::Principal;
use crate::AppState;

pub fn router(state: AppState) -> Router<AppState> {
    Router::new()
        .route("/", get(vm_list::list_vms))
        .route("/vms", get(vm_list::list_vms).post(create::create_vm))
        .route("/vms/new", get(create::new_vm))
        .route("/vms/{id}", get(vms::show_vm))
        .route("/vms/{id}/jobs/{job}", get(job::show_job))
        .route("/vms/{id}/extend", post(vm_actions::extend_vm))
        .route("/vms/{id}/destroy", post(vm_actions::destroy_vm))
        .route("/vms/{id}/retry", post(vm_actions::retry_vm))
        .route("/vms/{id}/refresh", post(vm_actions::refresh_vm))
        .route("/vms/{id}/history", get(vm_history::show_history))
        .route("/vms/{id}/jobs/{job}/cancel", post(vm_actions::cancel_job))
        .route(
            "/vms/{id}/jobs/{job}/force-cancel",
            post(vm_actions::force_cancel_job),
        )
        .route("/keys", get(keys::list_keys).post(keys::add_key))
        .route("/keys/generate", post(keys::generate_key))
        .route("/keys/{id}/delete", post(keys::delete_key))
        .route(
            "/tokens",
            get(tokens::list_tokens).post(tokens::create_token),
        )
        .route("/tokens/{id}/revoke", post(tokens::revoke_token))
        .route("/limits", get(limits::show_limits))
        .route(
            "/clusters",
            get(clusters::list_clusters).post(cluster_new::create_cluster),
        )
        .route("/clusters/new", get(cluster_new::new_cluster))
        .route("/clusters/{id}", get(clusters::show_cluster))
        .route("/clusters/{id}/scale", post(cluster_actions::scale_cluster))
        .route(
            "/clusters/{id}/destroy",
            post(cluster_actions::destroy_cluster),
        )
        .merge(live::router(state.clone()))
        .merge(admin::router())
        .merge(admin::audit::router(state.clone()))
        .route(
            "/sign-in",
            get(session::sign_in_page).post(session::sign_in),
        )
        .route("/sign-out", post(session::sign_out))
        .route("/assets/{file}", get(assets::get_asset))
}

/// What the base template shows on every page: the style sheet's URL and who is signed in.
pub(crate) struct Layout {
    pub css: &'static str,
    pub js: &'static str,
    /// The signed-in user's email; `None` on the sign-in page.
    pub who: Option<String>,
    pub admin: bool,
}

impl Layout {
    fn signed_out() -> Self {
        Layout {
            css: assets::css_path(),
            js: assets::js_path(),
            who: None,
            admin: false,
        }
    }

    fn of(principal: &Principal) -> Self {
        Layout {
            css: assets::css_path(),
            js: assets::js_path(),
            who: Some(principal.email.clone()),
            admin: principal.is_admin(),
        }
    }
}

/// A page the caller may not see, or that does not exist: the same answer for both.
#[derive(Template)]
#[template(path = "console/not_found.html")]
struct NotFoundPage {
    layout: Layout,
    detail: String,
}

fn not_found(principal: &Principal, detail: impl Into<String>) -> Response {
    page(
        StatusCode::NOT_FOUND,
        &NotFoundPage {
            layout: Layout::of(principal),
            detail: detail.into(),
        },
    )
}

/// A rendered page with `status`. Pages show one user's data: never cached, never framed,
/// and nothing loaded from elsewhere.
fn page(status: StatusCode, template: &impl Template) -> Response {
    match template.render() {
        Ok(html) => (
            status,
            [
                (
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("text/html; charset=utf-8"),
                ),
                (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
                (
                    header::CONTENT_SECURITY_POLICY,
                    HeaderValue::from_static(
                        "default-src 'none'; style-src 'self'; script-src 'self'; \
                         connect-src 'self'; form-action 'self'; \
                         frame-ancestors 'none'; base-uri 'none'",
                    ),
                ),
            ],
            // A sign-in or 404 page, not the API's JSON error body.
            axum::Extension(crate::input::OwnBody),
            html,
        )
            .into_response(),
        Err(e) => crate::ApiError::internal(e).into_response(),
    }
}

/// A time as the pages show it: to the minute, in UTC.
fn shown(at: OffsetDateTime) -> String {
    let at = at.to_offset(time::UtcOffset::UTC);
    at.format(time::macros::format_description!(
        "[year]-[month]-[day] [hour]:[minute] UTC"
    ))
    .unwrap_or_else(|_| at.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_shown_to_the_minute_in_utc() {
        let at = OffsetDateTime::parse(
            "2026-12-07T13:05:59+02:00",
            &time::format_description::well_known::Rfc3339,
        )
        .unwrap();
        assert_eq!(shown(at), "2026-12-07 11:05 UTC");
    }
}
