//! The cluster create form: a cluster template (with a count for each role whose count the
//! user may choose), the provider its nodes are made on, and how they are reached and how
//! long they live as for a VM, with the caller's limits beside it. The request is the
//! application layer's; a refusal is shown beside its field, the form keeping what was
//! typed.

use std::collections::BTreeMap;

use ::clusters::{ClusterTemplate, Count};
use askama::Template;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::response::Response;
use domain::provisioning::{ProviderId, VmName};

use super::form::{caller_of, poster, see_other, Fields, Refusal};
use super::limits::{limit_lines, LimitLine};
use super::reach::{self, KeyChoice, Reach, ReachChoices};
use super::session::{sign_in_required, signed_in};
use super::{page, Layout};
use crate::auth::Principal;
use crate::{ApiError, AppState};

/// What the form holds: empty at first, what was typed after a refusal.
#[derive(Default)]
struct Values {
    name: String,
    template: String,
    provider: String,
    /// Role counts as typed, by `count.<template>.<role>`.
    counts: BTreeMap<String, String>,
    reach: Reach,
}

/// A role whose count the user chooses, as an input under its template.
struct CountField {
    /// The input's name: `count.<template>.<role>`.
    field: String,
    role: String,
    min: u32,
    max: u32,
    value: String,
}

struct TemplateChoice {
    name: String,
    description: String,
    /// Its roles and their counts, as one line.
    roles: String,
    counts: Vec<CountField>,
}

struct ProviderChoice {
    id: String,
    name: String,
}

#[derive(Template)]
#[template(path = "console/cluster_new.html")]
struct NewClusterPage {
    layout: Layout,
    values: Values,
    templates: Vec<TemplateChoice>,
    providers: Vec<ProviderChoice>,
    keys: Vec<KeyChoice>,
    limits: Vec<LimitLine>,
    max_hours: u64,
    address: String,
    refusal: Option<Refusal>,
}

impl NewClusterPage {
    /// The refusal's reason when it is about the field `name` (and the fields shown with it).
    fn error(&self, name: &str) -> Option<&str> {
        let refusal = self.refusal.as_ref()?;
        let field = refusal.field.as_deref()?;
        let own = match name {
            "template" => field == "template" || field == "roles" || field.starts_with("roles."),
            "provider" | "name" => field == name,
            other => reach::fields_of(other).is_some_and(|f| refusal.about(f).is_some()),
        };
        own.then_some(refusal.detail.as_str())
    }

    /// The refusal when no field shows it.
    fn general(&self) -> Option<&str> {
        let refusal = self.refusal.as_ref()?;
        let shown = [
            "name", "template", "provider", "ssh", "networks", "duration",
        ]
        .iter()
        .any(|f| self.error(f).is_some());
        (!shown).then_some(refusal.detail.as_str())
    }
}

/// `GET /console/clusters/new`.
#[tracing::instrument(skip_all)]
pub(crate) async fn new_cluster(
    State(state): State<AppState>,
    mut parts: Parts,
) -> Result<Response, ApiError> {
    let Some(principal) = signed_in(&state, &parts).await? else {
        return Ok(sign_in_required(&state, &parts));
    };
    let values = Values {
        reach: Reach::new(),
        ..Values::default()
    };
    form(&state, &mut parts, &principal, values, None).await
}

/// `POST /console/clusters`: requests the cluster and goes to its page.
#[tracing::instrument(skip_all)]
pub(crate) async fn create_cluster(
    State(state): State<AppState>,
    mut parts: Parts,
    body: Bytes,
) -> Result<Response, ApiError> {
    let (principal, caller) = match poster(&state, &mut parts).await? {
        Ok(gate) => gate,
        Err(answer) => return Ok(answer),
    };
    let fields = Fields::parse(&body);
    let values = Values {
        name: fields.get("name").to_owned(),
        template: fields.get("template").to_owned(),
        provider: fields.get("provider").to_owned(),
        counts: fields
            .prefixed("count.")
            .map(|(k, v)| (format!("count.{k}"), v.to_owned()))
            .collect(),
        reach: Reach::of(&fields),
    };
    let requested = match request(&state, &values) {
        Ok(input) => state.app.request_cluster(&caller, input).await,
        Err(e) => Err(e),
    };
    match requested {
        Ok(cluster) => Ok(see_other(&format!(
            "/console/clusters/{}?done=created",
            cluster.id
        ))),
        Err(e) => {
            let refusal = Refusal::of(e)?;
            form(&state, &mut parts, &principal, values, Some(refusal)).await
        }
    }
}

/// The form's values as a request, parsed as the API parses its body.
fn request(state: &AppState, values: &Values) -> Result<app::clusters::ClusterRequest, app::Error> {
    let name = VmName::parse(&values.name)?;
    if values.template.is_empty() {
        return Err(app::Error::invalid("template", "choose a cluster template"));
    }
    let provider = ProviderId::parse(&values.provider)?;
    let mut roles = BTreeMap::new();
    if let Some(template) = state.app.clusters.get(&values.template) {
        for role in &template.roles {
            let field = format!("count.{}.{}", template.name, role.name);
            let typed = values.counts.get(&field).map_or("", String::as_str);
            if typed.is_empty() {
                continue;
            }
            let count = typed.parse::<u32>().map_err(|_| {
                app::Error::invalid(
                    &format!("roles.{}.count", role.name),
                    "give a whole number of nodes",
                )
            })?;
            let choice = app::clusters::RoleChoice {
                count: Some(count),
                template: None,
            };
            roles.insert(role.name.clone(), choice);
        }
    }
    Ok(app::clusters::ClusterRequest {
        id: None,
        name,
        template: values.template.clone(),
        provider,
        roles,
        ssh_key: values.reach.ssh_key()?,
        allow_ssh_from: values.reach.networks()?,
        duration: values.reach.duration()?,
    })
}

/// The form, from the cluster templates, the available providers, the caller's keys and
/// limits, with `values` and `refusal`.
async fn form(
    state: &AppState,
    parts: &mut Parts,
    principal: &Principal,
    values: Values,
    refusal: Option<Refusal>,
) -> Result<Response, ApiError> {
    let app = &state.app;
    let templates = app
        .clusters
        .templates()
        .iter()
        .map(|t| template_choice(t, &values.counts))
        .collect();
    let mut providers = Vec::new();
    for provider in store::catalog::providers(&app.pool).await? {
        let Ok(id) = ProviderId::parse(&provider.id) else {
            continue;
        };
        if app.provider_available(&id).await? {
            providers.push(ProviderChoice {
                id: provider.id,
                name: provider.name,
            });
        }
    }
    let (limits, usage) = app.limits_and_usage(principal).await?;
    let caller = caller_of(state, parts, principal).await;
    let ReachChoices { keys, address } = reach::choices(state, principal, &caller).await?;
    let status = refusal.as_ref().map_or(StatusCode::OK, |r| r.status);
    Ok(page(
        status,
        &NewClusterPage {
            layout: Layout::of(principal),
            values,
            templates,
            providers,
            keys,
            max_hours: limits.max_hours.value,
            limits: limit_lines(&limits, &usage),
            address,
            refusal,
        },
    ))
}

fn template_choice(template: &ClusterTemplate, typed: &BTreeMap<String, String>) -> TemplateChoice {
    let roles = template
        .roles
        .iter()
        .map(|r| match r.count {
            Count::Fixed(n) => format!("{} × {n}", r.name),
            Count::Range { min, max, .. } => format!("{} × {min} to {max}", r.name),
        })
        .collect::<Vec<_>>()
        .join(", ");
    let counts = template
        .roles
        .iter()
        .filter_map(|r| match r.count {
            Count::Fixed(_) => None,
            Count::Range { min, max, default } => {
                let field = format!("count.{}.{}", template.name, r.name);
                let value = typed
                    .get(&field)
                    .cloned()
                    .unwrap_or_else(|| default.to_string());
                Some(CountField {
                    field,
                    role: r.name.clone(),
                    min,
                    max,
                    value,
                })
            }
        })
        .collect();
    TemplateChoice {
        name: template.name.clone(),
        description: template.description.clone(),
        roles,
        counts,
    }
}
