//! The admins' pages: users (role and status), the catalog (enabled, order; providers and
//! templates created and edited), the platform gauges, policies (reload, denials by policy)
//! and dead letters (replay). A user who opens one gets the 403 page; every change goes
//! through the application layer, as the admin API's.

pub(super) mod audit;
mod audit_stream;
mod catalog;
mod catalog_form;
mod catalog_providers;
mod catalog_templates;
mod dead_letters;
mod gauges;
mod policies;
mod users;

use axum::http::request::Parts;
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;

use super::form::{forbidden, poster};
use super::session::{sign_in_required, signed_in};
use crate::auth::Principal;
use crate::{ApiError, AppState};

pub(crate) fn router() -> Router<AppState> {
    Router::new()
        .route("/admin/users", get(users::list_users))
        .route("/admin/users/{id}", post(users::change_user))
        .route(
            "/admin/catalog",
            get(catalog::show_catalog).post(catalog::change_catalog),
        )
        .route(
            "/admin/catalog/new-provider",
            get(catalog_providers::new_provider).post(catalog_providers::create_provider),
        )
        .route(
            "/admin/catalog/providers/{provider}",
            get(catalog_providers::edit_provider).post(catalog_providers::update_provider),
        )
        .route(
            "/admin/catalog/new-template",
            get(catalog_templates::new_template).post(catalog_templates::create_template),
        )
        .route(
            "/admin/catalog/templates/{provider}/{template}",
            get(catalog_templates::edit_template).post(catalog_templates::update_template),
        )
        .route("/admin/gauges", get(gauges::show_gauges))
        .route("/admin/gauges/stream", get(gauges::stream_gauges))
        .route("/admin/policies", get(policies::show_policies))
        .route("/admin/policies/reload", post(policies::reload_policies))
        .route("/admin/dead-letters", get(dead_letters::list_dead_letters))
        .route(
            "/admin/dead-letters/{id}/replay",
            post(dead_letters::replay_dead_letter),
        )
}

/// The admin who opens an admin's page: the sign-in form without a caller, the 403 page
/// for a user.
async fn admin_reader(
    state: &AppState,
    parts: &Parts,
) -> Result<Result<Principal, Response>, ApiError> {
    let Some(principal) = signed_in(state, parts).await? else {
        return Ok(Err(sign_in_required(state, parts)));
    };
    match principal.is_admin() {
        true => Ok(Ok(principal)),
        false => Ok(Err(forbidden(&principal))),
    }
}

/// The admin who posts an admin's form, as [`poster`] finds them; the 403 page for a user.
async fn admin_poster(
    state: &AppState,
    parts: &mut Parts,
) -> Result<Result<(Principal, app::Caller), Response>, ApiError> {
    Ok(match poster(state, parts).await? {
        Ok((principal, _)) if !principal.is_admin() => Err(forbidden(&principal)),
        other => other,
    })
}
