use axum::routing::get;
use axum::{Json, Router};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

mod answers;
mod headers;
mod links;

use answers::CommonAnswers;
use headers::Headers;
use links::Links;

use crate::routes::{
    admin, auth, callbacks, cli, clusters, health, me, providers, ssh_keys, taskservs, tokens, vms,
};
use crate::AppState;

#[derive(OpenApi)]
#[openapi(
    info(title = "Provisioning API", description = "Request virtual machines from a catalog of templates on several clouds, and follow every step."),
    paths(
        health::get_health, health::get_ready, health::get_metrics,
        vms::create_vm, vms::list_vms, vms::get_vm, vms::destroy_vm,
        vms::list_vm_events, vms::list_vm_logs, vms::stream_vm, vms::stream_vms,
        vms::retry_vm, vms::refresh_vm, vms::list_vm_jobs, vms::get_vm_job,
        vms::list_vm_job_logs, vms::cancel_vm_job, vms::force_cancel_vm_job, vms::archive_vm,
        vms::extend_vm, vms::patch_vm, callbacks::callback,
        ssh_keys::add_ssh_key, ssh_keys::generate_ssh_key, ssh_keys::list_ssh_keys,
        ssh_keys::get_ssh_key, ssh_keys::delete_ssh_key,
        tokens::create_token, tokens::list_tokens, tokens::delete_token, me::get_me,
        providers::list_providers, providers::list_templates,
        admin::list_all_providers, admin::create_provider, admin::update_provider,
        admin::reorder_providers, admin::validate_providers, admin::list_all_templates, admin::create_template,
        admin::update_template, admin::reorder_templates, admin::list_catalog_events,
        admin::set_taskserv_enabled,
        taskservs::list_taskservs, taskservs::install_vm_taskservs, taskservs::install_extension,
        taskservs::list_cluster_templates,
        clusters::create_cluster, clusters::list_clusters, clusters::get_cluster,
        clusters::destroy_cluster, clusters::scale_cluster, clusters::stream_cluster,
        clusters::list_cluster_events,
        admin::list_audit, admin::export_audit,
        admin::list_dead_letters, admin::replay_dead_letter,
        auth::login, auth::callback, auth::get_auth_status, auth::logout,
        cli::get_cli_config,
        admin::list_users, admin::update_user, admin::list_user_tokens, admin::revoke_user_token,
        admin::reload_policies,
        admin::list_policy_denials,
        admin::stream_platform,
        get_openapi,
    ),
    components(schemas(
        crate::error::ErrorBody, admin::PlatformEventOut, vms::VmStatusName, vms::Archived,
        crate::routes::schemas::EventType, crate::routes::schemas::Time,
        crate::routes::schemas::At,
    )),
    modifiers(&BearerAuth, &CommonAnswers, &Headers, &Links),
)]
pub struct ApiDoc;

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

pub fn router() -> Router<AppState> {
    Router::new().route("/openapi.json", get(get_openapi))
}

/// This document.
#[utoipa::path(get, path = "/api/v1/openapi.json", tag = "meta",
    security(("bearer" = [])),
    responses((status = 200, description = "The OpenAPI document", body = Object)))]
pub async fn get_openapi() -> Json<serde_json::Value> {
    Json(document())
}

/// The OpenAPI document as it is served and committed.
pub fn document() -> serde_json::Value {
    let mut document =
        serde_json::to_value(ApiDoc::openapi()).expect("the OpenAPI document is plain data");
    links::camel_case_links(&mut document);
    document
}

#[cfg(test)]
mod tests;
