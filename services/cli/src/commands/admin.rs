//! `admin audit [--follow]`, `admin audit export`, `admin users list|set-role|disable|enable`
//! and `admin policies reload`.

use std::io::Write;

use futures::StreamExt;
use serde_json::{json, Value};

use crate::args::{AuditArgs, AuditFilters, Format};
use crate::client::Api;
use crate::error::CliError;
use crate::output::{self, fields, short_id, Table};
use crate::sse::Parser;

use super::account::text;
use super::vm_ops::summary;

/// The filters as the API's query.
fn query(filters: &AuditFilters) -> Vec<(&'static str, String)> {
    let mut query = vec![];
    let mut push = |name, value: &Option<String>| {
        if let Some(value) = value {
            query.push((name, value.clone()));
        }
    };
    push("actor", &filters.actor);
    push("vm", &filters.vm);
    push("provider", &filters.provider);
    push("from", &filters.from);
    push("to", &filters.to);
    for kind in &filters.types {
        query.push(("type", kind.clone()));
    }
    if !filters.logs {
        query.push(("exclude_logs", "true".to_owned()));
    }
    query
}

pub async fn audit(api: &Api, format: Format, args: AuditArgs) -> Result<(), CliError> {
    if args.follow {
        return follow(api, format, &args.filters).await;
    }
    let mut query = query(&args.filters);
    query.push(("limit", args.limit.to_string()));
    if let Some(after) = args.after {
        query.push(("after", after.to_string()));
    }
    let page = api.get("/api/v1/audit", &query).await?;
    let items = page["items"].clone();
    output::print(format, &items, |style| {
        let mut table = Table::new(vec![
            "POSITION",
            "RECORDED",
            "TYPE",
            "ACTOR",
            "AGGREGATE",
            "DETAIL",
        ]);
        for event in items.as_array().into_iter().flatten() {
            table.row(row(event).into_iter().map(Into::into).collect());
        }
        Ok(table.render(style))
    })?;
    if let Some(next) = page["next"].as_u64() {
        if page["items"]
            .as_array()
            .is_some_and(|i| i.len() as u32 == args.limit)
        {
            eprintln!("More: provisioning admin audit --after {next}");
        }
    }
    Ok(())
}

/// An event's cells: position, time, type, actor, aggregate, the telling fields.
fn row(event: &Value) -> Vec<String> {
    vec![
        event["position"].to_string(),
        text(&event["recorded_at"]),
        text(&event["type"]),
        text(&event["actor"]),
        format!(
            "{} {}",
            text(&event["aggregate_type"]),
            short_id(&text(&event["aggregate_id"]))
        ),
        summary(&event["data"]),
    ]
}

/// Prints events as they commit until Ctrl-C, resuming after the last one seen when the
/// connection drops.
async fn follow(api: &Api, format: Format, filters: &AuditFilters) -> Result<(), CliError> {
    let query = query(filters);
    let mut last: Option<u64> = None;
    let mut failures = 0u32;
    let printing = async {
        loop {
            let response = match api.stream_with("/api/v1/admin/stream", &query, last).await {
                Ok(response) => response,
                Err(e @ CliError::Network { .. }) if failures < 10 => {
                    failures += 1;
                    if api.verbose() {
                        eprintln!("stream unreachable ({e}); trying again");
                    }
                    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                    continue;
                }
                Err(e) => return Err(e),
            };
            let mut parser = Parser::default();
            let mut body = response.bytes_stream();
            while let Some(Ok(bytes)) = body.next().await {
                for message in parser.feed(&bytes) {
                    if message.event == "end" {
                        return Err(CliError::NotSignedIn(format!(
                            "the platform ended the stream: {}",
                            message.data
                        )));
                    }
                    let Some(id) = message.id.as_deref().and_then(|id| id.parse().ok()) else {
                        continue;
                    };
                    last = Some(id);
                    failures = 0;
                    let event: Value = serde_json::from_str(&message.data).unwrap_or_default();
                    match format {
                        Format::Table => println!("{}", row(&event).join("  ")),
                        Format::Json | Format::Yaml => println!("{}", message.data),
                    }
                }
            }
            failures += 1;
            if failures > 10 {
                return Err(CliError::Network {
                    url: format!("{}/api/v1/admin/stream", api.base()),
                    cause: "the stream dropped again and again".into(),
                });
            }
            tokio::time::sleep(std::time::Duration::from_secs(1)).await;
        }
    };
    tokio::select! {
        result = printing => result,
        // Following ends with Ctrl-C: that is its normal end.
        _ = tokio::signal::ctrl_c() => Ok(()),
    }
}

/// Streams the export to stdout as it comes, one JSON object a line.
pub async fn export(api: &Api, filters: &AuditFilters) -> Result<(), CliError> {
    let response = api
        .get_streamed("/api/v1/audit/export", &query(filters))
        .await?;
    let url = response.url().to_string();
    let mut body = response.bytes_stream();
    let mut stdout = std::io::stdout().lock();
    while let Some(bytes) = body.next().await {
        let bytes = bytes.map_err(|e| CliError::network(&url, &e))?;
        stdout
            .write_all(&bytes)
            .map_err(|e| CliError::Local(format!("cannot write the export: {e}")))?;
    }
    stdout
        .flush()
        .map_err(|e| CliError::Local(format!("cannot write the export: {e}")))
}

pub async fn users(api: &Api, format: Format) -> Result<(), CliError> {
    let value = api.get("/api/v1/admin/users", &[]).await?;
    output::print(format, &value, |style| {
        let mut table = Table::new(vec![
            "ID",
            "EMAIL",
            "NAME",
            "ROLE",
            "STATUS",
            "GROUPS",
            "LAST SIGN-IN",
        ]);
        for user in value.as_array().into_iter().flatten() {
            let groups: Vec<String> = user["groups"]
                .as_array()
                .into_iter()
                .flatten()
                .map(text)
                .collect();
            table.row(vec![
                short_id(&text(&user["id"])).into(),
                text(&user["email"]).into(),
                text(&user["name"]).into(),
                text(&user["role"]).into(),
                text(&user["status"]).into(),
                groups.join(",").into(),
                text(&user["last_sign_in_at"]).into(),
            ]);
        }
        Ok(table.render(style))
    })
}

/// Changes the user named by id or email: `{"role": ...}` or `{"status": ...}`.
pub async fn change_user(
    api: &Api,
    format: Format,
    arg: &str,
    change: Value,
) -> Result<(), CliError> {
    let all = api.get("/api/v1/admin/users", &[]).await?;
    let wanted = arg.to_lowercase();
    let found: Vec<String> = all
        .as_array()
        .into_iter()
        .flatten()
        .filter(|u| text(&u["id"]) == arg || text(&u["email"]).to_lowercase() == wanted)
        .map(|u| text(&u["id"]))
        .collect();
    let id = match &found[..] {
        [id] => id.clone(),
        _ => {
            return Err(CliError::Api {
                status: 404,
                code: "not_found".into(),
                detail: format!("no user {arg}"),
            })
        }
    };
    let value = api
        .patch(&format!("/api/v1/admin/users/{id}"), &change)
        .await?;
    output::print(format, &value, |_| {
        Ok(fields(&[
            ("id", text(&value["id"])),
            ("email", text(&value["email"])),
            ("role", text(&value["role"])),
            ("status", text(&value["status"])),
        ]))
    })
}

pub async fn reload_policies(api: &Api, format: Format) -> Result<(), CliError> {
    let value = api.post_empty("/api/v1/admin/policies/reload").await?;
    output::print(format, &value, |_| {
        Ok(format!(
            "Policies reloaded: {} from {}\n",
            value["policies"],
            text(&value["source"])
        ))
    })
}

/// `{"role": role}`.
pub fn role(role: &str) -> Value {
    json!({"role": role})
}

/// `{"status": status}`.
pub fn status(status: &str) -> Value {
    json!({"status": status})
}
