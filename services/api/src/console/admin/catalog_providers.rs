//! A provider's forms, for admins: a new one (`create_provider`) and an existing one's
//! name, order and whether it is enabled (`update_provider`). Done: `303` to the catalog
//! with a notice; refused: the form again with what was typed and the reason beside its
//! field.

use app::catalog::{NewProvider, ProviderChanges};
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::request::Parts;
use axum::response::Response;
use domain::provisioning::ProviderId;

use super::super::form::{see_other, Fields, Refusal};
use super::super::not_found;
use super::catalog_form::{form_page, required, ticked, whole, Input, Kind};
use super::{admin_poster, admin_reader};
use crate::auth::Principal;
use crate::{ApiError, AppState};

const NEW: &str = "/console/admin/catalog/new-provider";

/// What a provider's form holds.
struct Values {
    id: String,
    name: String,
    sort_order: String,
    enabled: bool,
}

impl Values {
    fn of(fields: &Fields) -> Self {
        Values {
            id: fields.get("id").to_owned(),
            name: fields.get("name").to_owned(),
            sort_order: fields.get("sort_order").to_owned(),
            enabled: fields.get("enabled") == "on",
        }
    }

    /// The inputs; the id only on a new provider's form (an id never changes).
    fn inputs(&self, new: bool) -> Vec<Input> {
        let mut inputs = vec![];
        if new {
            inputs.push(Input::new("id", "Id", Kind::Text, &self.id).help(
                "1 to 64 characters of a-z, 0-9, '.', '_' or '-', e.g. nrec-uio; it never changes.",
            ));
        }
        inputs.push(
            Input::new("name", "Name", Kind::Text, &self.name)
                .help("The name users read, e.g. NREC UiO."),
        );
        let order_help = match new {
            true => "Providers are listed by it, lower first; blank: after the last one.",
            false => "Providers are listed by it, lower first.",
        };
        inputs.push(
            Input::new("sort_order", "Sort order", Kind::Number, &self.sort_order).help(order_help),
        );
        inputs.push(Input::new(
            "enabled",
            "Enabled: users may create VMs on it",
            Kind::Checkbox,
            ticked(self.enabled),
        ));
        inputs
    }
}

/// A new provider's id is its `id` input; the domain names it `provider`.
const ALIASES: &[(&str, &str)] = &[("provider", "id")];

fn new_form(principal: &Principal, values: &Values, refusal: Option<Refusal>) -> Response {
    let inputs = values.inputs(true);
    let title = "New provider".to_owned();
    form_page(
        principal,
        title,
        NEW.into(),
        "Create the provider",
        inputs,
        refusal,
        ALIASES,
    )
}

/// `GET /console/admin/catalog/new-provider`.
#[tracing::instrument(skip_all)]
pub(crate) async fn new_provider(
    State(state): State<AppState>,
    parts: Parts,
) -> Result<Response, ApiError> {
    let principal = match admin_reader(&state, &parts).await? {
        Ok(principal) => principal,
        Err(answer) => return Ok(answer),
    };
    let values = Values {
        id: String::new(),
        name: String::new(),
        sort_order: String::new(),
        enabled: true,
    };
    Ok(new_form(&principal, &values, None))
}

/// `POST /console/admin/catalog/new-provider`: fields `id`, `name`, `sort_order` (blank:
/// last), `enabled` (a checkbox).
#[tracing::instrument(skip_all)]
pub(crate) async fn create_provider(
    State(state): State<AppState>,
    mut parts: Parts,
    body: Bytes,
) -> Result<Response, ApiError> {
    let (principal, caller) = match admin_poster(&state, &mut parts).await? {
        Ok(gate) => gate,
        Err(answer) => return Ok(answer),
    };
    let values = Values::of(&Fields::parse(&body));
    let created = async {
        let new = NewProvider {
            id: ProviderId::parse(&values.id)?,
            name: values.name.clone(),
            enabled: Some(values.enabled),
            sort_order: whole("sort_order", &values.sort_order)?,
        };
        state.app.create_provider(&caller, new).await
    };
    match created.await {
        Ok(_) => Ok(see_other("/console/admin/catalog?done=created")),
        Err(e) => Ok(new_form(&principal, &values, Some(Refusal::of(e)?))),
    }
}

fn edit_form(
    principal: &Principal,
    id: &str,
    values: &Values,
    refusal: Option<Refusal>,
) -> Response {
    let inputs = values.inputs(false);
    let title = format!("Provider {id}");
    let action = format!("/console/admin/catalog/providers/{id}");
    form_page(principal, title, action, "Save", inputs, refusal, &[])
}

/// `GET /console/admin/catalog/providers/{provider}`.
#[tracing::instrument(skip_all, fields(provider = %id))]
pub(crate) async fn edit_provider(
    State(state): State<AppState>,
    Path(id): Path<String>,
    parts: Parts,
) -> Result<Response, ApiError> {
    let principal = match admin_reader(&state, &parts).await? {
        Ok(principal) => principal,
        Err(answer) => return Ok(answer),
    };
    let Some(row) = current(&state, &id).await? else {
        return Ok(not_found(&principal, format!("There is no provider {id}.")));
    };
    let values = Values {
        id: row.id.clone(),
        name: row.name,
        sort_order: row.sort_order.to_string(),
        enabled: row.enabled,
    };
    Ok(edit_form(&principal, &id, &values, None))
}

/// `POST /console/admin/catalog/providers/{provider}`: fields `name`, `sort_order`,
/// `enabled` (a checkbox); what did not change is not recorded.
#[tracing::instrument(skip_all, fields(provider = %id))]
pub(crate) async fn update_provider(
    State(state): State<AppState>,
    Path(id): Path<String>,
    mut parts: Parts,
    body: Bytes,
) -> Result<Response, ApiError> {
    let (principal, caller) = match admin_poster(&state, &mut parts).await? {
        Ok(gate) => gate,
        Err(answer) => return Ok(answer),
    };
    let Some(row) = current(&state, &id).await? else {
        return Ok(not_found(&principal, format!("There is no provider {id}.")));
    };
    let values = Values::of(&Fields::parse(&body));
    let saved = async {
        let changes = ProviderChanges {
            name: Some(values.name.clone()),
            sort_order: Some(required("sort_order", &values.sort_order)?),
            enabled: (values.enabled != row.enabled).then_some(values.enabled),
        };
        let id = ProviderId::parse(&row.id)?;
        state.app.update_provider(&caller, id, changes).await
    };
    match saved.await {
        Ok(_) => Ok(see_other("/console/admin/catalog?done=saved")),
        Err(e) => Ok(edit_form(&principal, &id, &values, Some(Refusal::of(e)?))),
    }
}

async fn current(
    state: &AppState,
    id: &str,
) -> Result<Option<store::catalog::ProviderRow>, ApiError> {
    let Ok(id) = ProviderId::parse(id) else {
        return Ok(None);
    };
    Ok(store::catalog::provider(&state.app.pool, &id).await?)
}
