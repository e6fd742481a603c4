//! The create form: a VM from the catalog (a template of an available provider, taskservs
//! with their params, an SSH key registered or pasted, the networks allowed to reach it with the caller's own
//! address, its duration), with the caller's limits and usage beside it. The values are
//! parsed as the API parses them and the request is the application layer's; a refusal is
//! shown beside its field, the form keeping what was typed.

use askama::Template;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::response::Response;
use domain::provisioning::{ProviderId, TemplateId, VmName};

use super::form::{caller_of, poster, see_other, Fields, Refusal};
use super::limits::{limit_lines, LimitLine};
use super::reach::{self, KeyChoice, Reach, ReachChoices};
use super::session::{sign_in_required, signed_in};
use super::taskserv_params::{self, TaskservChoice, Typed};
use super::{page, Layout};
use crate::auth::Principal;
use crate::{ApiError, AppState};

/// What the form holds: empty at first, what was typed after a refusal.
#[derive(Default)]
struct Values {
    name: String,
    /// `provider/template`.
    template: String,
    taskservs: Vec<String>,
    /// The taskservs' params as typed, by `<taskserv>.<param>`.
    params: Typed,
    reach: Reach,
}

struct TemplateChoice {
    value: String,
    label: String,
}

struct ProviderChoice {
    name: String,
    templates: Vec<TemplateChoice>,
}

#[derive(Template)]
#[template(path = "console/create.html")]
struct CreatePage {
    layout: Layout,
    values: Values,
    providers: Vec<ProviderChoice>,
    taskservs: Vec<TaskservChoice>,
    keys: Vec<KeyChoice>,
    limits: Vec<LimitLine>,
    max_hours: u64,
    /// The caller's address as the platform sees it, or why it cannot tell.
    address: String,
    refusal: Option<Refusal>,
    /// Whether the refusal is shown beside a taskserv or one of its params.
    placed: bool,
}

impl CreatePage {
    /// The refusal's reason when it is about the field `name` (and the fields shown with it).
    fn error(&self, name: &str) -> Option<&str> {
        if name == "taskservs" && self.placed {
            return None;
        }
        let fields: &[&str] = match name {
            "template" => &["provider", "template"],
            "taskservs" => &["taskservs"],
            other => reach::fields_of(other).unwrap_or(&["name"]),
        };
        self.refusal.as_ref()?.about(fields)
    }

    /// The refusal when no field shows it.
    fn general(&self) -> Option<&str> {
        let refusal = self.refusal.as_ref()?;
        let shown = [
            "name",
            "template",
            "ssh",
            "networks",
            "duration",
            "taskservs",
        ]
        .iter()
        .any(|f| self.error(f).is_some())
            || self.placed;
        (!shown).then_some(refusal.detail.as_str())
    }

    fn checked(&self, taskserv: &str) -> bool {
        self.values.taskservs.iter().any(|t| t == taskserv)
    }
}

/// `GET /console/vms/new`.
#[tracing::instrument(skip_all)]
pub(crate) async fn new_vm(
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

/// `POST /console/vms`: requests the VM and goes to its page.
#[tracing::instrument(skip_all)]
pub(crate) async fn create_vm(
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
        taskservs: fields
            .all("taskserv")
            .into_iter()
            .map(str::to_owned)
            .collect(),
        params: taskserv_params::typed(&fields),
        reach: Reach::of(&fields),
    };
    let listing = state.app.list_taskservs().await?;
    let requested = match request(&values, &listing) {
        Ok(input) => state.app.request_vm(&caller, input, None).await,
        Err(e) => Err(e),
    };
    match requested {
        Ok(app::Outcome::Done(vm)) => {
            Ok(see_other(&format!("/console/vms/{}?done=created", vm.id)))
        }
        // Only a request with an idempotency key is replayed; the form sends none.
        Ok(app::Outcome::Replayed(_)) => Ok(see_other("/console/vms")),
        Err(e) => {
            let refusal = Refusal::of(e)?;
            form(&state, &mut parts, &principal, values, Some(refusal)).await
        }
    }
}

/// The form's values as a request, parsed as the API parses its body.
fn request(
    values: &Values,
    listing: &[app::taskservs::TaskservListing],
) -> Result<app::vms::VmRequest, app::Error> {
    let name = VmName::parse(&values.name)?;
    let (provider, template) = values
        .template
        .split_once('/')
        .ok_or_else(|| app::Error::invalid("template", "choose a template"))?;
    let ssh_key = values.reach.ssh_key()?;
    let allow_ssh_from = values.reach.networks()?;
    let duration = values.reach.duration()?;
    let taskservs = taskserv_params::requests(&values.taskservs, &values.params, listing)?;
    Ok(app::vms::VmRequest {
        id: None,
        name,
        provider: ProviderId::parse(provider)?,
        template: TemplateId::parse(template)?,
        ssh_key,
        allow_ssh_from,
        duration,
        taskservs,
        cluster: None,
    })
}

/// The form, from the catalog, the caller's keys and limits, with `values` and `refusal`.
async fn form(
    state: &AppState,
    parts: &mut Parts,
    principal: &Principal,
    values: Values,
    refusal: Option<Refusal>,
) -> Result<Response, ApiError> {
    let app = &state.app;
    let mut providers = Vec::new();
    for provider in store::catalog::providers(&app.pool).await? {
        let Ok(id) = ProviderId::parse(&provider.id) else {
            continue;
        };
        if !app.provider_available(&id).await? {
            continue;
        }
        let templates = store::catalog::templates(&app.pool, &id).await?;
        providers.push(ProviderChoice {
            name: provider.name,
            templates: templates
                .into_iter()
                .map(|t| TemplateChoice {
                    value: format!("{}/{}", t.provider_id, t.id),
                    label: template_label(&t),
                })
                .collect(),
        });
    }
    let mut taskservs = taskserv_params::choices(&app.list_taskservs().await?, &values.params);
    let placed = refusal
        .as_ref()
        .and_then(|r| r.about(&["taskservs"]))
        .is_some_and(|detail| taskserv_params::place(&mut taskservs, detail));
    let (limits, usage) = app.limits_and_usage(principal).await?;
    let caller = caller_of(state, parts, principal).await;
    let ReachChoices { keys, address } = reach::choices(state, principal, &caller).await?;
    let status = refusal.as_ref().map_or(StatusCode::OK, |r| r.status);
    Ok(page(
        status,
        &CreatePage {
            layout: Layout::of(principal),
            values,
            providers,
            taskservs,
            keys,
            max_hours: limits.max_hours.value,
            limits: limit_lines(&limits, &usage),
            address,
            refusal,
            placed,
        },
    ))
}

fn template_label(t: &store::catalog::TemplateRow) -> String {
    let gpu = t
        .gpu
        .as_deref()
        .map(|g| format!(", GPU {g}"))
        .unwrap_or_default();
    format!(
        "{} — {} vCPU, {} GB RAM, {} GB disk{gpu}",
        t.name, t.cpu, t.ram_gb, t.storage_gb
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values() -> Values {
        Values {
            name: "web-1".into(),
            template: "local/small".into(),
            reach: Reach {
                ssh_public_key: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEpXvA+cP8hcraKOw+cO1rzIpAv7ms7vMYjhAKF7Qed/ me@laptop".into(),
                networks: "192.0.2.0/24, 198.51.100.0/24".into(),
                me: true,
                duration: "4".into(),
                ..Reach::default()
            },
            ..Values::default()
        }
    }

    #[test]
    fn the_form_is_read_as_a_request() {
        let input = request(&values(), &[]).unwrap();
        assert_eq!(input.provider.as_str(), "local");
        assert_eq!(input.template.as_str(), "small");
        assert_eq!(
            input.allow_ssh_from,
            ["192.0.2.0/24", "198.51.100.0/24", "me"]
        );
        assert_eq!(input.duration.get(), 4);
    }

    #[test]
    fn a_missing_value_names_its_field() {
        let field = |v: Values| match request(&v, &[]) {
            Err(app::Error::Invalid { field, .. }) => field,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            field(Values {
                name: String::new(),
                ..values()
            }),
            "name"
        );
        assert_eq!(
            field(Values {
                template: String::new(),
                ..values()
            }),
            "template"
        );
        let mut no_key = values();
        no_key.reach.ssh_public_key.clear();
        assert_eq!(field(no_key), "ssh_public_key");
    }
}
