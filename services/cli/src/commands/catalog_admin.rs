//! `admin catalog`: offering a provider, a template or a taskserv, or no longer; adding
//! providers and templates, changing their fields and their order, through the admin API.
//! Each prints what the API answers: the entry, or the entries in their new order.

use serde_json::{json, Map, Value};

use crate::args::{
    CatalogCommand, Format, ProviderCreate, ProviderUpdate, ProvidersEdit, TemplateCreate,
    TemplateUpdate, TemplatesEdit,
};
use crate::client::Api;
use crate::error::CliError;
use crate::output::{self, fields, Table};

pub async fn catalog(api: &Api, format: Format, command: &CatalogCommand) -> Result<(), CliError> {
    let answer = match command {
        CatalogCommand::Providers(edit) => providers(api, edit).await?,
        CatalogCommand::Templates(edit) => templates(api, edit).await?,
        CatalogCommand::Taskserv(switch) => {
            let (entry, enabled) = switch.parts();
            let path = format!(
                "/api/v1/admin/providers/{}/taskservs/{}",
                segment(&entry.provider),
                segment(&entry.name)
            );
            api.put(&path, &json!({ "enabled": enabled })).await?
        }
    };
    output::print(format, &answer, |style| match &answer {
        Value::Array(entries) => Ok(order(entries).render(style)),
        entry => Ok(summary(entry)),
    })
}

async fn providers(api: &Api, edit: &ProvidersEdit) -> Result<Value, CliError> {
    let path = |id: &str| format!("/api/v1/admin/providers/{}", segment(id));
    match edit {
        ProvidersEdit::Enable(entry) | ProvidersEdit::Disable(entry) => {
            let enabled = matches!(edit, ProvidersEdit::Enable(_));
            api.patch(&path(&entry.provider), &json!({ "enabled": enabled }))
                .await
        }
        ProvidersEdit::Create(new) => {
            api.post("/api/v1/admin/providers", &provider_body(new))
                .await
        }
        ProvidersEdit::Update(change) => {
            api.patch(&path(&change.provider), &provider_change(change)?)
                .await
        }
        ProvidersEdit::Reorder { ids } => {
            api.put("/api/v1/admin/providers/order", &json!({ "ids": ids }))
                .await
        }
    }
}

async fn templates(api: &Api, edit: &TemplatesEdit) -> Result<Value, CliError> {
    let path = |provider: &str, id: &str| {
        format!(
            "/api/v1/admin/templates/{}/{}",
            segment(provider),
            segment(id)
        )
    };
    match edit {
        TemplatesEdit::Enable(entry) | TemplatesEdit::Disable(entry) => {
            let enabled = matches!(edit, TemplatesEdit::Enable(_));
            let body = json!({ "enabled": enabled });
            api.patch(&path(&entry.provider, &entry.template), &body)
                .await
        }
        TemplatesEdit::Create(new) => {
            api.post("/api/v1/admin/templates", &template_body(new))
                .await
        }
        TemplatesEdit::Update(change) => {
            let body = template_change(change)?;
            api.patch(&path(&change.provider, &change.template), &body)
                .await
        }
        TemplatesEdit::Reorder { provider, ids } => {
            let path = format!(
                "/api/v1/admin/providers/{}/templates/order",
                segment(provider)
            );
            api.put(&path, &json!({ "ids": ids })).await
        }
    }
}

fn provider_body(new: &ProviderCreate) -> Value {
    let mut body = json!({"id": new.provider, "name": new.name, "enabled": !new.disabled});
    set(&mut body, "sort_order", new.sort_order.map(Value::from));
    body
}

fn provider_change(change: &ProviderUpdate) -> Result<Value, CliError> {
    let mut body = json!({});
    set(&mut body, "name", change.name.clone().map(Value::from));
    set(&mut body, "sort_order", change.sort_order.map(Value::from));
    something(body)
}

pub fn template_body(new: &TemplateCreate) -> Value {
    let mut body = json!({
        "provider": new.provider,
        "id": new.template,
        "name": new.name,
        "flavor_name": new.flavor_name,
        "image_name": new.image_name,
        "cpu": new.cpu,
        "ram_gb": new.ram_gb,
        "storage_gb": new.storage_gb,
        "tags": new.tags,
        "enabled": !new.disabled,
    });
    set(
        &mut body,
        "description",
        new.description.clone().map(Value::from),
    );
    set(&mut body, "username", new.username.clone().map(Value::from));
    set(&mut body, "gpu", new.gpu.clone().map(Value::from));
    set(&mut body, "sort_order", new.sort_order.map(Value::from));
    body
}

pub fn template_change(change: &TemplateUpdate) -> Result<Value, CliError> {
    let mut body = json!({});
    let text = |v: &Option<String>| v.clone().map(Value::from);
    set(&mut body, "name", text(&change.name));
    set(&mut body, "description", text(&change.description));
    set(&mut body, "flavor_name", text(&change.flavor_name));
    set(&mut body, "image_name", text(&change.image_name));
    set(&mut body, "username", text(&change.username));
    set(&mut body, "cpu", change.cpu.map(Value::from));
    set(&mut body, "ram_gb", change.ram_gb.map(Value::from));
    set(&mut body, "storage_gb", change.storage_gb.map(Value::from));
    set(&mut body, "sort_order", change.sort_order.map(Value::from));
    match (&change.gpu, change.no_gpu) {
        (Some(gpu), _) => body["gpu"] = json!(gpu),
        (None, true) => body["gpu"] = Value::Null,
        (None, false) => {}
    }
    if !change.tags.is_empty() {
        body["tags"] = json!(change.tags);
    }
    something(body)
}

fn set(body: &mut Value, key: &str, value: Option<Value>) {
    if let (Some(value), Value::Object(map)) = (value, body) {
        map.insert(key.to_owned(), value);
    }
}

/// A change that changes something; a usage error otherwise.
fn something(body: Value) -> Result<Value, CliError> {
    match body.as_object().is_some_and(Map::is_empty) {
        true => Err(CliError::Usage(
            "nothing to change: give at least one field to change".into(),
        )),
        false => Ok(body),
    }
}

/// A catalog id as one path segment: ids are `[a-z0-9._-]`, anything else is escaped so
/// it cannot name another route.
fn segment(id: &str) -> String {
    url::form_urlencoded::byte_serialize(id.as_bytes()).collect()
}

/// The entry's id, name and whether it is offered, whatever its kind.
fn summary(entry: &Value) -> String {
    let mut pairs = vec![];
    for key in [
        "provider",
        "provider_id",
        "id",
        "taskserv",
        "name",
        "enabled",
    ] {
        if let Some(value) = entry.get(key).filter(|v| !v.is_null()) {
            let text = value.as_str().map_or(value.to_string(), str::to_owned);
            pairs.push((key, text));
        }
    }
    fields(&pairs)
}

/// Entries in their new order, one a line.
fn order(entries: &[Value]) -> Table {
    let mut table = Table::new(vec!["ID", "NAME", "ENABLED"]);
    for entry in entries {
        let text = |key: &str| match &entry[key] {
            Value::String(s) => s.clone(),
            Value::Null => "-".to_owned(),
            other => other.to_string(),
        };
        table.row(vec![
            text("id").into(),
            text("name").into(),
            text("enabled").into(),
        ]);
    }
    table
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::args::{AdminCommand, Cli, Command};

    fn edit(line: &str) -> TemplatesEdit {
        let cli = Cli::try_parse_from(line.split(' ')).unwrap();
        match cli.command {
            Command::Admin(AdminCommand::Catalog(CatalogCommand::Templates(edit))) => edit,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_template_update_sends_only_the_fields_given() {
        let TemplatesEdit::Update(change) = edit(
            "provisioning admin catalog templates update local small --cpu 2 --no-gpu --tag a --tag b",
        ) else {
            panic!()
        };
        assert_eq!(
            template_change(&change).unwrap(),
            json!({"cpu": 2, "gpu": null, "tags": ["a", "b"]})
        );
        let TemplatesEdit::Update(nothing) =
            edit("provisioning admin catalog templates update local small")
        else {
            panic!()
        };
        assert_eq!(template_change(&nothing).unwrap_err().exit_code(), 2);
    }

    #[test]
    fn a_new_template_has_the_apis_field_names() {
        let TemplatesEdit::Create(new) = edit(
            "provisioning admin catalog templates create local tiny --name Tiny \
             --flavor-name f1 --image-name img --cpu 1 --ram-gb 2 --storage-gb 10 --disabled",
        ) else {
            panic!()
        };
        assert_eq!(
            template_body(&new),
            json!({"provider": "local", "id": "tiny", "name": "Tiny", "flavor_name": "f1",
                   "image_name": "img", "cpu": 1, "ram_gb": 2, "storage_gb": 10,
                   "tags": [], "enabled": false})
        );
    }
}
