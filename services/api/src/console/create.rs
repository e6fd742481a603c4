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
use domain::provisioning::{DurationHours, ProviderId, SshPublicKey, TemplateId, VmName};

use super::form::{caller_of, poster, see_other, Fields, Refusal};
use super::limits::{limit_lines, LimitLine};
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
    ssh_key_id: String,
    ssh_public_key: String,
    networks: String,
    me: bool,
    duration: String,
}

struct TemplateChoice {
    value: String,
    label: String,
}

struct ProviderChoice {
    name: String,
    templates: Vec<TemplateChoice>,
}

struct KeyChoice {
    id: String,
    label: String,
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
            "ssh" => &["ssh_key_id", "ssh_public_key"],
            "networks" => &["allow_ssh_from"],
            "duration" => &["duration_hours"],
            "taskservs" => &["taskservs"],
            _ => &["name"],
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
        duration: "4".into(),
        me: true,
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
        ssh_key_id: fields.get("ssh_key_id").to_owned(),
        ssh_public_key: fields.get("ssh_public_key").to_owned(),
        networks: fields.get("networks").to_owned(),
        me: fields.get("me") == "on",
        duration: fields.get("duration_hours").to_owned(),
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
    let invalid = |field: &str, reason: &str| app::Error::Invalid {
        field: field.into(),
        reason: reason.into(),
    };
    let name = VmName::parse(&values.name)?;
    let (provider, template) = values
        .template
        .split_once('/')
        .ok_or_else(|| invalid("template", "choose a template"))?;
    let ssh_key = match (values.ssh_key_id.as_str(), values.ssh_public_key.as_str()) {
        ("", "") => {
            return Err(invalid(
                "ssh_public_key",
                "choose a registered key or paste a public key",
            ))
        }
        ("", key) => app::vms::SshKeyChoice::Key(SshPublicKey::parse(key)?),
        (_, key) if !key.is_empty() => {
            return Err(invalid(
                "ssh_public_key",
                "choose a registered key or paste one, not both",
            ))
        }
        (id, _) => app::vms::SshKeyChoice::Registered(id.to_owned()),
    };
    let mut allow_ssh_from: Vec<String> = values
        .networks
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|n| !n.is_empty())
        .map(str::to_owned)
        .collect();
    if values.me {
        allow_ssh_from.push("me".into());
    }
    if allow_ssh_from.is_empty() {
        return Err(invalid(
            "allow_ssh_from",
            "give at least one network, or allow your own address",
        ));
    }
    let hours = values
        .duration
        .parse::<i64>()
        .map_err(|_| invalid("duration_hours", "give a whole number of hours"))?;
    let taskservs = taskserv_params::requests(&values.taskservs, &values.params, listing)?;
    Ok(app::vms::VmRequest {
        id: None,
        name,
        provider: ProviderId::parse(provider)?,
        template: TemplateId::parse(template)?,
        ssh_key,
        allow_ssh_from,
        duration: DurationHours::parse(hours)?,
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
    let keys = app
        .ssh_keys(principal)
        .await?
        .into_iter()
        .map(|k| KeyChoice {
            id: k.id.to_string(),
            label: format!("{} ({})", k.name, k.fingerprint),
        })
        .collect();
    let (limits, usage) = app.limits_and_usage(principal).await?;
    let caller = caller_of(state, parts, principal).await;
    let address = match caller.client_addr.0 {
        Ok(ip) => ip.to_string(),
        Err(why) => format!("unknown: {why}"),
    };
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
            ssh_public_key: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEpXvA+cP8hcraKOw+cO1rzIpAv7ms7vMYjhAKF7Qed/ me@laptop".into(),
            networks: "192.0.2.0/24, 198.51.100.0/24".into(),
            me: true,
            duration: "4".into(),
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
        let no_key = Values {
            ssh_public_key: String::new(),
            ..values()
        };
        assert_eq!(field(no_key), "ssh_public_key");
        let nowhere = Values {
            networks: String::new(),
            me: false,
            ..values()
        };
        assert_eq!(field(nowhere), "allow_ssh_from");
        assert_eq!(
            field(Values {
                duration: "0".into(),
                ..values()
            }),
            "duration_hours"
        );
    }
}
