//! `job list|show|cancel|force-cancel`: the jobs of a VM.

use serde_json::Value;

use crate::args::Format;
use crate::client::Api;
use crate::error::CliError;
use crate::names;
use crate::output::{self, fields, Cell, Colour, Table};

pub async fn list(api: &Api, format: Format, arg: &str) -> Result<(), CliError> {
    let id = names::resolve(api, arg).await?;
    let value = api.get(&format!("/api/v1/vms/{id}/jobs"), &[]).await?;
    output::print(format, &value, |style| {
        let mut table = Table::new(vec![
            "JOB", "ACTION", "STATE", "QUEUED", "STARTED", "ENDED", "REASON",
        ]);
        for job in value.as_array().into_iter().flatten() {
            let state = text(&job["state"]);
            table.row(vec![
                job["id"].to_string().into(),
                text(&job["action"]).into(),
                Cell::coloured(state.clone(), colour(&state)),
                text(&job["queued_at"]).into(),
                text(&job["started_at"]).into(),
                text(&job["ended_at"]).into(),
                text(&job["reason"]).into(),
            ]);
        }
        Ok(table.render(style))
    })
}

pub async fn show(api: &Api, format: Format, arg: &str, job: u32) -> Result<(), CliError> {
    let id = names::resolve(api, arg).await?;
    let value = api
        .get(&format!("/api/v1/vms/{id}/jobs/{job}"), &[])
        .await?;
    output::print(format, &value, |_| Ok(one(&value)))
}

/// `cancel` or `force-cancel` (`verb`, as the API names it).
pub async fn cancel(
    api: &Api,
    format: Format,
    arg: &str,
    job: u32,
    verb: &str,
) -> Result<(), CliError> {
    let id = names::resolve(api, arg).await?;
    let value = api
        .post_empty(&format!("/api/v1/vms/{id}/jobs/{job}/{verb}"))
        .await?;
    output::print(format, &value, |_| Ok(one(&value)))
}

/// One job as `name  value` lines.
fn one(job: &Value) -> String {
    let mut pairs = vec![
        ("job", job["id"].to_string()),
        ("action", text(&job["action"])),
        ("state", text(&job["state"])),
        ("queued", text(&job["queued_at"])),
        ("started", text(&job["started_at"])),
        ("ended", text(&job["ended_at"])),
    ];
    for (name, field) in [
        ("cancel asked", "cancel_requested_at"),
        ("exit code", "exit_code"),
        ("reason", "reason"),
        ("asked by", "requested_by"),
    ] {
        if !job[field].is_null() {
            pairs.push((name, text(&job[field])));
        }
    }
    fields(&pairs)
}

fn text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => "-".to_owned(),
        other => other.to_string(),
    }
}

fn colour(state: &str) -> Option<Colour> {
    match state {
        "succeeded" => Some(Colour::Green),
        "failed" | "cancelled" => Some(Colour::Red),
        _ => Some(Colour::Yellow),
    }
}
