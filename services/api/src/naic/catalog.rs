//! NAIC's catalog reads (templates with the caller's quota, and the admin pages' providers
//! and templates), the caller's keys, and the admin list of users.

use axum::extract::{Path, State};
use axum::Json;
use domain::provisioning::{ProviderId, TemplateId};
use serde::Serialize;
use serde_json::json;

use super::shapes::{parse_template_id, NaicKey, NaicProvider, NaicTemplate, NaicUser};
use crate::auth::Principal;
use crate::{ApiError, AppState};

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TemplatesOut {
    pub vm_templates: Vec<NaicTemplate>,
    pub quota: Quota,
}

/// How many VMs the caller may still request, from the Cedar limits and what they hold.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Quota {
    pub remaining_quota: i64,
    pub allocated_quota: i64,
}

/// The templates a user may pick: enabled ones of available providers, each with its
/// provider; and the caller's VM quota.
pub async fn list_templates(
    State(state): State<AppState>,
    principal: Principal,
) -> Result<Json<TemplatesOut>, ApiError> {
    let mut vm_templates = Vec::new();
    for provider in store::catalog::providers(&state.app.pool).await? {
        let Ok(id) = ProviderId::parse(&provider.id) else {
            continue;
        };
        if !crate::routes::providers::available(&state, &id).await? {
            continue;
        }
        for t in store::catalog::templates(&state.app.pool, &id).await? {
            vm_templates.push(NaicTemplate::of(&t, Some(&provider)));
        }
    }
    let (limits, usage) = state.app.limits_and_usage(&principal).await?;
    let allocated = i64::try_from(limits.vms.value).unwrap_or(i64::MAX);
    let held = i64::try_from(usage.vms).unwrap_or(i64::MAX);
    Ok(Json(TemplatesOut {
        vm_templates,
        quota: Quota {
            remaining_quota: allocated.saturating_sub(held).max(0),
            allocated_quota: allocated,
        },
    }))
}

/// The caller's registered keys, oldest first.
pub async fn list_keys(
    State(state): State<AppState>,
    principal: Principal,
) -> Result<Json<Vec<NaicKey>>, ApiError> {
    let rows = store::ssh_keys::list(&state.app.pool, &principal.owner_key()).await?;
    let user = principal.user.as_uuid();
    Ok(Json(rows.iter().map(|r| NaicKey::of(r, user)).collect()))
}

/// Admin: the enabled providers, by display order.
pub async fn list_providers(
    State(state): State<AppState>,
) -> Result<Json<Vec<NaicProvider>>, ApiError> {
    let rows = store::catalog::providers(&state.app.pool).await?;
    Ok(Json(
        rows.iter()
            .filter(|p| p.enabled)
            .map(NaicProvider::from)
            .collect(),
    ))
}

async fn provider(state: &AppState, id: &str) -> Result<store::catalog::ProviderRow, ApiError> {
    let not_found = || ApiError::NotFound(format!("no provider {id:?}"));
    let parsed = ProviderId::parse(id).map_err(|_| not_found())?;
    store::catalog::provider(&state.app.pool, &parsed)
        .await?
        .ok_or_else(not_found)
}

/// Admin: one provider, enabled or not.
pub async fn get_provider(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<NaicProvider>, ApiError> {
    Ok(Json(NaicProvider::from(&provider(&state, &id).await?)))
}

/// Admin: every template of a provider, disabled ones too, each with its provider.
pub async fn list_provider_templates(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<Vec<NaicTemplate>>, ApiError> {
    let row = provider(&state, &id).await?;
    let parsed = ProviderId::parse(&row.id).map_err(ApiError::internal)?;
    let templates = store::naic::all_templates(&state.app.pool, &parsed).await?;
    Ok(Json(
        templates
            .iter()
            .map(|t| NaicTemplate::of(t, Some(&row)))
            .collect(),
    ))
}

/// Admin: one template (`<provider>:<template>`), without its provider, as NAIC answers.
pub async fn get_template(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<NaicTemplate>, ApiError> {
    let not_found = || ApiError::NotFound(format!("no template {id:?}"));
    let (provider, template) = parse_template_id(&id).ok_or_else(not_found)?;
    let provider = ProviderId::parse(provider).map_err(|_| not_found())?;
    let template = TemplateId::parse(template).map_err(|_| not_found())?;
    let row = store::catalog::template(&state.app.pool, &provider, &template)
        .await?
        .ok_or_else(not_found)?;
    Ok(Json(NaicTemplate::of(&row, None)))
}

/// Admin: every user (NAIC's own backend answers `{}` here, by a bug).
pub async fn list_users(State(state): State<AppState>) -> Result<Json<Vec<NaicUser>>, ApiError> {
    let users = store::users::list(&state.app.pool)
        .await
        .map_err(crate::error::store_failed)?;
    Ok(Json(
        users
            .iter()
            .map(|r| NaicUser::of(&r.user, Some(r.created_at)))
            .collect(),
    ))
}

/// `{status: "success"}`, NAIC's answer to a destroy or an archive.
pub fn success() -> Json<serde_json::Value> {
    Json(json!({"status": "success"}))
}
