//! What the platform offers and who the caller is: `providers list`, `templates list`,
//! `taskserv list`, `me`, `providers validate`.

use serde_json::Value;

use crate::args::Format;
use crate::client::Api;
use crate::error::CliError;
use crate::output::{self, fields, Cell, Colour, Table};
use crate::wire::{read, Me, Provider, Taskserv, Template};

pub async fn me(api: &Api, format: Format) -> Result<(), CliError> {
    let value = api.get("/api/v1/me", &[]).await?;
    output::print(format, &value, |_| {
        let me: Me = read(&value, "user")?;
        let mut pairs = vec![
            ("id", me.id),
            ("email", me.email),
            ("role", me.role),
            ("groups", me.groups.join(", ")),
        ];
        for (name, limit) in &me.limits {
            let used = me.usage.get(name).map(Value::to_string);
            let value = limit["value"].to_string();
            let shown = match used {
                Some(used) => format!("{used} of {value}"),
                None => value,
            };
            let policy = limit["policy"].as_str().unwrap_or("-");
            pairs.push((name.as_str(), format!("{shown} (policy {policy})")));
        }
        Ok(fields(&pairs))
    })
}

pub async fn providers(api: &Api, format: Format) -> Result<(), CliError> {
    let value = api.get("/api/v1/providers", &[]).await?;
    output::print(format, &value, |style| {
        let providers: Vec<Provider> = read(&value, "provider list")?;
        let mut table = Table::new(vec!["ID", "NAME", "AVAILABLE", "WHY NOT", "REGIONS"]);
        for p in providers {
            let why_not = match (p.enabled, p.credentials_present) {
                (false, _) => "disabled",
                (true, false) => "no credentials",
                (true, true) => "",
            };
            let available = if p.available { "yes" } else { "no" };
            let colour = Some(if p.available {
                Colour::Green
            } else {
                Colour::Yellow
            });
            table.row(vec![
                p.id.into(),
                p.name.into(),
                Cell::coloured(available, colour),
                why_not.into(),
                p.regions.join(",").into(),
            ]);
        }
        Ok(table.render(style))
    })
}

pub async fn templates(api: &Api, format: Format, provider: Option<&str>) -> Result<(), CliError> {
    let providers: Vec<String> = match provider {
        Some(provider) => vec![provider.to_owned()],
        None => {
            let all: Vec<Provider> =
                read(&api.get("/api/v1/providers", &[]).await?, "provider list")?;
            all.into_iter()
                .filter(|p| p.available)
                .map(|p| p.id)
                .collect()
        }
    };
    let mut all = vec![];
    for provider in providers {
        let path = format!("/api/v1/providers/{provider}/templates");
        match api.get(&path, &[]).await? {
            Value::Array(items) => all.extend(items),
            _ => return Err(CliError::Local(format!("{path} answered no list"))),
        }
    }
    let value = Value::Array(all);
    output::print(format, &value, |style| {
        let templates: Vec<Template> = read(&value, "template list")?;
        let mut table = Table::new(vec![
            "PROVIDER",
            "ID",
            "CPU",
            "RAM GB",
            "DISK GB",
            "GPU",
            "IMAGE",
            "DESCRIPTION",
        ]);
        for t in templates {
            table.row(vec![
                t.provider.into(),
                t.id.into(),
                t.cpu.to_string().into(),
                t.ram_gb.to_string().into(),
                t.storage_gb.to_string().into(),
                t.gpu.unwrap_or_else(|| "-".into()).into(),
                t.image_name.into(),
                t.description.into(),
            ]);
        }
        Ok(table.render(style))
    })
}

pub async fn taskservs(api: &Api, format: Format) -> Result<(), CliError> {
    let value = api.get("/api/v1/extensions/taskservs", &[]).await?;
    output::print(format, &value, |style| {
        let taskservs: Vec<Taskserv> = read(&value, "taskserv list")?;
        let mut table = Table::new(vec![
            "NAME",
            "VERSION",
            "CATEGORY",
            "NEEDS",
            "PARAMS",
            "DESCRIPTION",
        ]);
        for t in taskservs {
            let params: Vec<String> = t
                .params
                .iter()
                .map(|(name, spec)| {
                    let kind = spec["type"].as_str().unwrap_or("?");
                    match spec.get("default") {
                        Some(default) => format!("{name}:{kind}={default}"),
                        None => format!("{name}:{kind}"),
                    }
                })
                .collect();
            // What it needs; what it orders itself before or conflicts with is in -o json.
            let needs: Vec<&str> = t
                .depends_on
                .iter()
                .filter(|d| d.kind == "requires")
                .map(|d| d.name.as_str())
                .collect();
            table.row(vec![
                t.name.into(),
                t.version.into(),
                t.category.into(),
                needs.join(",").into(),
                params.join(" ").into(),
                t.description.into(),
            ]);
        }
        Ok(table.render(style))
    })
}

/// The checks a provider passes to take requests, as far as the API shows them: enabled in
/// the registry and the catalog, its credentials present, templates offered. Exit 1 when
/// one fails. (The registry's own check of its Terraform folders against the catalog runs
/// where the daemon runs: `provisioningd providers validate`.)
pub async fn validate(api: &Api, format: Format, only: Option<&str>) -> Result<(), CliError> {
    let providers: Vec<Provider> =
        read(&api.get("/api/v1/providers", &[]).await?, "provider list")?;
    let selected: Vec<Provider> = providers
        .into_iter()
        .filter(|p| only.is_none_or(|id| p.id == id))
        .collect();
    if let (Some(id), true) = (only, selected.is_empty()) {
        return Err(CliError::Api {
            status: 404,
            code: "not_found".into(),
            detail: format!("no provider {id}"),
        });
    }
    // An admin also gets the server's check of the catalog against the provider registry;
    // another caller may not ask it (403) and gets what the API shows.
    let registry: Vec<String> = match api.get("/api/v1/admin/providers/validate", &[]).await {
        Ok(found) => found["problems"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| p.as_str().map(str::to_owned))
            .collect(),
        Err(CliError::Api { status: 403, .. }) => vec![],
        Err(e) => return Err(e),
    };
    let mut results = vec![];
    for p in &selected {
        let templates = match api
            .get(&format!("/api/v1/providers/{}/templates", p.id), &[])
            .await?
        {
            Value::Array(items) => items.len(),
            _ => 0,
        };
        let mut problems = vec![];
        if !p.enabled {
            problems.push("disabled".to_owned());
        }
        if !p.credentials_present {
            problems.push("credentials missing".to_owned());
        }
        if p.available && templates == 0 {
            problems.push("no template offered".to_owned());
        }
        let named = format!("template {}/", p.id);
        problems.extend(registry.iter().filter(|r| r.starts_with(&named)).cloned());
        results.push(serde_json::json!({
            "provider": p.id,
            "enabled": p.enabled,
            "credentials_present": p.credentials_present,
            "templates": templates,
            "ok": problems.is_empty(),
            "problems": problems,
        }));
    }
    let value = Value::Array(results);
    output::print(format, &value, |style| {
        let mut table = Table::new(vec![
            "PROVIDER",
            "ENABLED",
            "CREDENTIALS",
            "TEMPLATES",
            "CHECK",
        ]);
        for r in value.as_array().into_iter().flatten() {
            let ok = r["ok"].as_bool().unwrap_or(false);
            let check = if ok {
                "ok".to_owned()
            } else {
                r["problems"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let yes_no = |v: &Value| {
                if v.as_bool() == Some(true) {
                    "yes"
                } else {
                    "no"
                }
            };
            table.row(vec![
                r["provider"].as_str().unwrap_or("-").into(),
                yes_no(&r["enabled"]).into(),
                yes_no(&r["credentials_present"]).into(),
                r["templates"].to_string().into(),
                Cell::coloured(check, Some(if ok { Colour::Green } else { Colour::Red })),
            ]);
        }
        Ok(table.render(style))
    })?;
    let failed: Vec<&str> = value
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| r["ok"] != Value::Bool(true))
        .filter_map(|r| r["provider"].as_str())
        .collect();
    if failed.is_empty() {
        return Ok(());
    }
    Err(CliError::Api {
        status: 200,
        code: "provider_not_ready".into(),
        detail: format!("not ready to take requests: {}", failed.join(", ")),
    })
}
