//! A template's forms, for admins: a new one of a provider (`create_template`) and every
//! field of an existing one (`update_template`), as the admin API takes them. Done: `303`
//! to the catalog with a notice; refused: the form again with what was typed and the
//! reason beside its field.

use app::catalog::NewTemplate;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::request::Parts;
use axum::response::Response;
use domain::catalog::TemplateChanges;
use domain::provisioning::{ProviderId, TemplateId};

use super::super::form::{see_other, Fields, Refusal};
use super::super::not_found;
use super::catalog_form::{form_page, required, tags, ticked, whole, Input, Kind};
use super::{admin_poster, admin_reader};
use crate::auth::Principal;
use crate::{ApiError, AppState};

const NEW: &str = "/console/admin/catalog/new-template";

/// What a template's form holds, as typed.
#[derive(Default)]
struct Values {
    provider: String,
    id: String,
    name: String,
    description: String,
    flavor_name: String,
    image_name: String,
    username: String,
    cpu: String,
    ram_gb: String,
    storage_gb: String,
    gpu: String,
    tags: String,
    sort_order: String,
    enabled: bool,
}

impl Values {
    fn of(fields: &Fields) -> Self {
        let get = |name| fields.get(name).to_owned();
        Values {
            provider: get("provider"),
            id: get("id"),
            name: get("name"),
            description: get("description"),
            flavor_name: get("flavor_name"),
            image_name: get("image_name"),
            username: get("username"),
            cpu: get("cpu"),
            ram_gb: get("ram_gb"),
            storage_gb: get("storage_gb"),
            gpu: get("gpu"),
            tags: get("tags"),
            sort_order: get("sort_order"),
            enabled: fields.get("enabled") == "on",
        }
    }

    fn from_row(t: store::catalog::TemplateRow) -> Self {
        Values {
            provider: t.provider_id,
            id: t.id,
            name: t.name,
            description: t.description,
            flavor_name: t.flavor_name,
            image_name: t.image_name,
            username: t.username,
            cpu: t.cpu.to_string(),
            ram_gb: t.ram_gb.to_string(),
            storage_gb: t.storage_gb.to_string(),
            gpu: t.gpu.unwrap_or_default(),
            tags: t.tags.join(", "),
            sort_order: t.sort_order.to_string(),
            enabled: t.enabled,
        }
    }

    /// The inputs; the provider and id only on a new template's form (`providers`: the
    /// choices), as they never change.
    fn inputs(&self, providers: Option<Vec<(String, String)>>) -> Vec<Input> {
        let new = providers.is_some();
        let mut inputs = vec![];
        if let Some(mut providers) = providers {
            providers.insert(0, (String::new(), "Choose a provider".into()));
            inputs.push(
                Input::new("provider", "Provider", Kind::Select, &self.provider).options(providers),
            );
            inputs.push(
                Input::new("id", "Id", Kind::Text, &self.id)
                    .help("1 to 64 characters of a-z, 0-9, '.', '_' or '-', unique within the provider, e.g. gpu-xl-l40s; it never changes."),
            );
        }
        let text = |name, label, value: &String| Input::new(name, label, Kind::Text, value);
        let number = |name, label, value: &String| Input::new(name, label, Kind::Number, value);
        inputs.extend([
            text("name", "Name", &self.name),
            Input::new("description", "Description", Kind::Textarea, &self.description)
                .help("At most 2000 characters; may be empty."),
            text("flavor_name", "Flavor", &self.flavor_name)
                .help("The provider's machine type, passed to Terraform."),
            text("image_name", "Image", &self.image_name)
                .help("The provider's image, passed to Terraform."),
            text("username", "SSH user", &self.username)
                .help("The user to log in as over SSH."),
            number("cpu", "vCPUs", &self.cpu),
            number("ram_gb", "RAM (GB)", &self.ram_gb),
            number("storage_gb", "Disk (GB)", &self.storage_gb),
            text("gpu", "GPU", &self.gpu).help("E.g. 1 x NVIDIA L40S; blank: none."),
            text("tags", "Tags", &self.tags).help(
                "Lowercase words separated by commas: simple or advanced (the view that lists it), gpu, …",
            ),
            number("sort_order", "Sort order", &self.sort_order).help(match new {
                true => "Listed by it within its provider, lower first; blank: after the last one.",
                false => "Listed by it within its provider, lower first.",
            }),
            Input::new(
                "enabled",
                "Enabled: users may create VMs from it",
                Kind::Checkbox,
                ticked(self.enabled),
            ),
        ]);
        inputs
    }
}

/// A new template's id is its `id` input; the domain names it `template`.
const ALIASES: &[(&str, &str)] = &[("template", "id")];

async fn new_form(
    state: &AppState,
    principal: &Principal,
    values: &Values,
    refusal: Option<Refusal>,
) -> Result<Response, ApiError> {
    let providers = store::catalog::providers(&state.app.pool)
        .await?
        .into_iter()
        .map(|p| (p.id.clone(), format!("{} ({})", p.name, p.id)))
        .collect();
    let inputs = values.inputs(Some(providers));
    let title = "New template".to_owned();
    let submit = "Create the template";
    Ok(form_page(
        principal,
        title,
        NEW.into(),
        submit,
        inputs,
        refusal,
        ALIASES,
    ))
}

/// `GET /console/admin/catalog/new-template` (`?provider=` chooses the provider).
#[tracing::instrument(skip_all)]
pub(crate) async fn new_template(
    State(state): State<AppState>,
    parts: Parts,
) -> Result<Response, ApiError> {
    let principal = match admin_reader(&state, &parts).await? {
        Ok(principal) => principal,
        Err(answer) => return Ok(answer),
    };
    let query = Fields::parse(parts.uri.query().unwrap_or("").as_bytes());
    let values = Values {
        provider: query.get("provider").to_owned(),
        username: "ubuntu".into(),
        tags: "simple".into(),
        enabled: true,
        ..Values::default()
    };
    new_form(&state, &principal, &values, None).await
}

/// `POST /console/admin/catalog/new-template`: the fields of the admin API's
/// `POST /api/v1/admin/templates`; `enabled` a checkbox, blanks the defaults.
#[tracing::instrument(skip_all)]
pub(crate) async fn create_template(
    State(state): State<AppState>,
    mut parts: Parts,
    body: Bytes,
) -> Result<Response, ApiError> {
    let (principal, caller) = match admin_poster(&state, &mut parts).await? {
        Ok(gate) => gate,
        Err(answer) => return Ok(answer),
    };
    let v = Values::of(&Fields::parse(&body));
    let created = async {
        let new = NewTemplate {
            provider: ProviderId::parse(&v.provider)?,
            id: TemplateId::parse(&v.id)?,
            name: v.name.clone(),
            description: Some(v.description.clone()),
            flavor_name: v.flavor_name.clone(),
            image_name: v.image_name.clone(),
            username: Some(v.username.clone()).filter(|u| !u.is_empty()),
            cpu: required("cpu", &v.cpu)?,
            ram_gb: required("ram_gb", &v.ram_gb)?,
            storage_gb: required("storage_gb", &v.storage_gb)?,
            gpu: Some(v.gpu.clone()).filter(|g| !g.is_empty()),
            tags: Some(tags(&v.tags)),
            enabled: Some(v.enabled),
            sort_order: whole("sort_order", &v.sort_order)?,
        };
        state.app.create_template(&caller, new).await
    };
    match created.await {
        Ok(_) => Ok(see_other("/console/admin/catalog?done=created")),
        Err(e) => new_form(&state, &principal, &v, Some(Refusal::of(e)?)).await,
    }
}

fn edit_form(principal: &Principal, values: &Values, refusal: Option<Refusal>) -> Response {
    let (provider, id) = (&values.provider, &values.id);
    let title = format!("Template {provider}/{id}");
    let action = format!("/console/admin/catalog/templates/{provider}/{id}");
    form_page(
        principal,
        title,
        action,
        "Save",
        values.inputs(None),
        refusal,
        &[],
    )
}

/// `GET /console/admin/catalog/templates/{provider}/{template}`.
#[tracing::instrument(skip_all, fields(provider = %provider, template = %template))]
pub(crate) async fn edit_template(
    State(state): State<AppState>,
    Path((provider, template)): Path<(String, String)>,
    parts: Parts,
) -> Result<Response, ApiError> {
    let principal = match admin_reader(&state, &parts).await? {
        Ok(principal) => principal,
        Err(answer) => return Ok(answer),
    };
    match current(&state, &provider, &template).await? {
        Some(row) => Ok(edit_form(&principal, &Values::from_row(row), None)),
        None => Ok(missing(&principal, &provider, &template)),
    }
}

/// `POST /console/admin/catalog/templates/{provider}/{template}`: every field of the
/// admin API's `PATCH /api/v1/admin/templates/{provider}/{template}`; what did not change
/// is not recorded, a blank GPU removes it.
#[tracing::instrument(skip_all, fields(provider = %provider, template = %template))]
pub(crate) async fn update_template(
    State(state): State<AppState>,
    Path((provider, template)): Path<(String, String)>,
    mut parts: Parts,
    body: Bytes,
) -> Result<Response, ApiError> {
    let (principal, caller) = match admin_poster(&state, &mut parts).await? {
        Ok(gate) => gate,
        Err(answer) => return Ok(answer),
    };
    let Some(row) = current(&state, &provider, &template).await? else {
        return Ok(missing(&principal, &provider, &template));
    };
    let was_enabled = row.enabled;
    let typed = Values::of(&Fields::parse(&body));
    let v = Values {
        provider: row.provider_id,
        id: row.id,
        ..typed
    };
    let saved = async {
        let changes = TemplateChanges {
            name: Some(v.name.clone()),
            description: Some(v.description.clone()),
            flavor_name: Some(v.flavor_name.clone()),
            image_name: Some(v.image_name.clone()),
            username: Some(v.username.clone()),
            cpu: Some(required("cpu", &v.cpu)?),
            ram_gb: Some(required("ram_gb", &v.ram_gb)?),
            storage_gb: Some(required("storage_gb", &v.storage_gb)?),
            gpu: Some(Some(v.gpu.clone()).filter(|g| !g.is_empty())),
            tags: Some(tags(&v.tags)),
            sort_order: Some(required("sort_order", &v.sort_order)?),
        };
        let enabled = (v.enabled != was_enabled).then_some(v.enabled);
        let provider = ProviderId::parse(&v.provider)?;
        let id = TemplateId::parse(&v.id)?;
        state
            .app
            .update_template(&caller, provider, id, changes, enabled)
            .await
    };
    match saved.await {
        Ok(_) => Ok(see_other("/console/admin/catalog?done=saved")),
        Err(e) => Ok(edit_form(&principal, &v, Some(Refusal::of(e)?))),
    }
}

fn missing(principal: &Principal, provider: &str, template: &str) -> Response {
    not_found(
        principal,
        format!("There is no template {template} of provider {provider}."),
    )
}

async fn current(
    state: &AppState,
    provider: &str,
    template: &str,
) -> Result<Option<store::catalog::TemplateRow>, ApiError> {
    let (Ok(provider), Ok(template)) = (ProviderId::parse(provider), TemplateId::parse(template))
    else {
        return Ok(None);
    };
    Ok(store::catalog::template(&state.app.pool, &provider, &template).await?)
}
