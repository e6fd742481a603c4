//! What the platform offers and who the caller is: `providers list`, `templates list`,
//! `taskserv list`, `me`.

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
