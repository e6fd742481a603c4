//! The catalog, for admins: providers and their templates (disabled ones too), each with a
//! button to enable or disable it, buttons to move it up or down, and a link to its form
//! (`catalog_providers`, `catalog_templates`). Every change is the
//! application layer's (`update_provider`, `update_template`, `reorder_providers`,
//! `reorder_templates`), recorded as the admin API's are.

use askama::Template;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::response::Response;
use domain::catalog::TemplateChanges;
use domain::provisioning::{ProviderId, TemplateId};

use super::super::form::{see_other, Fields, Refusal};
use super::super::{page, Layout};
use super::{admin_poster, admin_reader};
use crate::auth::Principal;
use crate::{ApiError, AppState};

struct TemplateLine {
    id: String,
    label: String,
    enabled: bool,
}

struct ProviderLine {
    id: String,
    name: String,
    enabled: bool,
    templates: Vec<TemplateLine>,
}

#[derive(Template)]
#[template(path = "console/admin/catalog.html")]
struct CatalogPage {
    layout: Layout,
    providers: Vec<ProviderLine>,
    refusal: Option<Refusal>,
    notice: Option<&'static str>,
}

/// `GET /console/admin/catalog`.
#[tracing::instrument(skip_all)]
pub(crate) async fn show_catalog(
    State(state): State<AppState>,
    parts: Parts,
) -> Result<Response, ApiError> {
    let principal = match admin_reader(&state, &parts).await? {
        Ok(principal) => principal,
        Err(answer) => return Ok(answer),
    };
    let notice = match parts.uri.query() {
        Some("done=changed") => Some("The catalog was changed."),
        Some("done=created") => Some("It was added to the catalog."),
        Some("done=saved") => Some("The changes were saved."),
        _ => None,
    };
    answer(&state, &principal, StatusCode::OK, None, notice).await
}

/// `POST /console/admin/catalog`: fields `provider`, `template` (none: the provider),
/// `action` (`enable`, `disable`, `up`, `down`).
#[tracing::instrument(skip_all)]
pub(crate) async fn change_catalog(
    State(state): State<AppState>,
    mut parts: Parts,
    body: Bytes,
) -> Result<Response, ApiError> {
    let (principal, caller) = match admin_poster(&state, &mut parts).await? {
        Ok(gate) => gate,
        Err(answer) => return Ok(answer),
    };
    let fields = Fields::parse(&body);
    match change(&state, &caller, &fields).await {
        Ok(()) => Ok(see_other("/console/admin/catalog?done=changed")),
        Err(e) => {
            let refusal = Refusal::of(e)?;
            let status = refusal.status;
            answer(&state, &principal, status, Some(refusal), None).await
        }
    }
}

async fn change(state: &AppState, caller: &app::Caller, fields: &Fields) -> Result<(), app::Error> {
    let app = &state.app;
    let provider = ProviderId::parse(fields.get("provider"))?;
    let template = match fields.get("template") {
        "" => None,
        t => Some(TemplateId::parse(t)?),
    };
    let action = fields.get("action");
    match (template, action) {
        (None, "enable" | "disable") => {
            let changes = app::catalog::ProviderChanges {
                enabled: Some(action == "enable"),
                ..Default::default()
            };
            app.update_provider(caller, provider, changes)
                .await
                .map(|_| ())
        }
        (Some(t), "enable" | "disable") => app
            .update_template(
                caller,
                provider,
                t,
                TemplateChanges::default(),
                Some(action == "enable"),
            )
            .await
            .map(|_| ()),
        (None, "up" | "down") => {
            let ids: Vec<String> = store::catalog::providers(&app.pool)
                .await?
                .into_iter()
                .map(|p| p.id)
                .collect();
            let ids = moved(ids, provider.as_str(), action == "up")
                .iter()
                .map(|id| ProviderId::parse(id))
                .collect::<Result<_, _>>()?;
            app.reorder_providers(caller, ids).await.map(|_| ())
        }
        (Some(t), "up" | "down") => {
            let all = store::catalog::all_templates(&app.pool, Some(&provider)).await?;
            let ids: Vec<String> = all.into_iter().map(|t| t.id).collect();
            let ids = moved(ids, t.as_str(), action == "up")
                .iter()
                .map(|id| TemplateId::parse(id))
                .collect::<Result<_, _>>()?;
            app.reorder_templates(caller, provider, ids)
                .await
                .map(|_| ())
        }
        _ => Err(app::Error::Invalid {
            field: "action".into(),
            reason: format!("{action:?} is not enable, disable, up or down"),
        }),
    }
}

/// `ids` with `id` moved one place up (earlier) or down.
fn moved(mut ids: Vec<String>, id: &str, up: bool) -> Vec<String> {
    if let Some(at) = ids.iter().position(|i| i == id) {
        let other = if up {
            at.checked_sub(1)
        } else {
            Some(at + 1).filter(|o| *o < ids.len())
        };
        if let Some(other) = other {
            ids.swap(at, other);
        }
    }
    ids
}

async fn answer(
    state: &AppState,
    principal: &Principal,
    status: StatusCode,
    refusal: Option<Refusal>,
    notice: Option<&'static str>,
) -> Result<Response, ApiError> {
    let pool = &state.app.pool;
    let mut providers = Vec::new();
    for p in store::catalog::providers(pool).await? {
        let Ok(id) = ProviderId::parse(&p.id) else {
            continue;
        };
        let templates = store::catalog::all_templates(pool, Some(&id))
            .await?
            .into_iter()
            .map(|t| TemplateLine {
                label: format!("{} ({} vCPU, {} GB RAM)", t.name, t.cpu, t.ram_gb),
                id: t.id,
                enabled: t.enabled,
            })
            .collect();
        providers.push(ProviderLine {
            id: p.id,
            name: p.name,
            enabled: p.enabled,
            templates,
        });
    }
    Ok(page(
        status,
        &CatalogPage {
            layout: Layout::of(principal),
            providers,
            refusal,
            notice,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_moves_one_place_and_not_past_either_end() {
        let ids = || vec!["a".to_owned(), "b".into(), "c".into()];
        assert_eq!(moved(ids(), "b", true), ["b", "a", "c"]);
        assert_eq!(moved(ids(), "b", false), ["a", "c", "b"]);
        assert_eq!(moved(ids(), "a", true), ["a", "b", "c"]);
        assert_eq!(moved(ids(), "c", false), ["a", "b", "c"]);
    }
}
