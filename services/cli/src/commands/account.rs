//! What a user keeps on the platform: `keys list|add|generate|remove` and
//! `tokens list|create|revoke`.

use std::path::Path;

use serde_json::{json, Value};

use crate::args::Format;
use crate::client::Api;
use crate::config::write_private;
use crate::error::CliError;
use crate::output::{self, fields, short_id, Table};

pub async fn keys(api: &Api, format: Format) -> Result<(), CliError> {
    let value = api.get("/api/v1/ssh-keys", &[]).await?;
    output::print(format, &value, |style| {
        let mut table = Table::new(vec!["ID", "NAME", "ALGORITHM", "FINGERPRINT", "ADDED"]);
        for key in items(&value) {
            table.row(vec![
                short_id(&text(&key["id"])).into(),
                text(&key["name"]).into(),
                text(&key["algorithm"]).into(),
                text(&key["fingerprint"]).into(),
                text(&key["created_at"]).into(),
            ]);
        }
        Ok(table.render(style))
    })
}

pub async fn add_key(api: &Api, format: Format, name: &str, file: &Path) -> Result<(), CliError> {
    let public_key = std::fs::read_to_string(file).map_err(|e| {
        CliError::Usage(format!("cannot read the key file {}: {e}", file.display()))
    })?;
    let value = api
        .post(
            "/api/v1/ssh-keys",
            &json!({"name": name, "public_key": public_key.trim()}),
        )
        .await?;
    output::print(format, &value, |_| Ok(key_fields(&value)))
}

/// Asks the platform for a key pair and writes its private key to `out`, a new file only
/// its owner may read; the platform keeps only the public key.
pub async fn generate_key(
    api: &Api,
    format: Format,
    name: &str,
    out: &Path,
) -> Result<(), CliError> {
    if out.exists() {
        return Err(CliError::Usage(format!(
            "{} exists: give --out a new file",
            out.display()
        )));
    }
    let answer = api
        .post("/api/v1/ssh-keys/generate", &json!({"name": name}))
        .await?;
    let private = answer["private_key"]
        .as_str()
        .ok_or_else(|| CliError::Local("the platform answered no private key".into()))?;
    write_private(out, private.as_bytes()).map_err(|e| {
        CliError::Local(format!(
            "the key {name} is registered, but its private key could not be written to {}: \
             {e}; remove the key and generate another",
            out.display()
        ))
    })?;
    eprintln!("Private key written to {} (mode 0600)", out.display());
    // The private key stays out of what is printed, whatever the format.
    let key = answer["key"].clone();
    output::print(format, &key, |_| Ok(key_fields(&key)))
}

pub async fn remove_key(api: &Api, format: Format, arg: &str) -> Result<(), CliError> {
    let all = api.get("/api/v1/ssh-keys", &[]).await?;
    let id = pick(&all, arg, "key")?;
    let value = api.delete(&format!("/api/v1/ssh-keys/{id}")).await?;
    done(format, &value, &format!("Removed key {arg}"))
}

fn key_fields(key: &Value) -> String {
    fields(&[
        ("id", text(&key["id"])),
        ("name", text(&key["name"])),
        ("algorithm", text(&key["algorithm"])),
        ("fingerprint", text(&key["fingerprint"])),
    ])
}

pub async fn tokens(api: &Api, format: Format) -> Result<(), CliError> {
    let value = api.get("/api/v1/tokens", &[]).await?;
    output::print(format, &value, |style| {
        let mut table = Table::new(vec![
            "ID",
            "NAME",
            "PREFIX",
            "CREATED",
            "EXPIRES",
            "LAST USED",
        ]);
        for token in items(&value) {
            table.row(vec![
                short_id(&text(&token["id"])).into(),
                text(&token["name"]).into(),
                text(&token["prefix"]).into(),
                text(&token["created_at"]).into(),
                text(&token["expires_at"]).into(),
                text(&token["last_used_at"]).into(),
            ]);
        }
        Ok(table.render(style))
    })
}

pub async fn create_token(
    api: &Api,
    format: Format,
    name: &str,
    expires: Option<&str>,
) -> Result<(), CliError> {
    let mut body = json!({"name": name});
    if let Some(expires) = expires {
        body["expires_at"] = json!(expires);
    }
    let value = api.post("/api/v1/tokens", &body).await?;
    output::print(format, &value, |_| {
        eprintln!("Save the token now: it is shown this once.");
        Ok(fields(&[
            ("id", text(&value["id"])),
            ("name", text(&value["name"])),
            ("expires", text(&value["expires_at"])),
            ("token", text(&value["token"])),
        ]))
    })
}

pub async fn revoke_token(api: &Api, format: Format, arg: &str) -> Result<(), CliError> {
    let all = api.get("/api/v1/tokens", &[]).await?;
    let id = pick(&all, arg, "token")?;
    let value = api.delete(&format!("/api/v1/tokens/{id}")).await?;
    done(format, &value, &format!("Revoked token {arg}"))
}

/// What a command that answers nothing much prints: the API's answer for programs, a line
/// for people.
fn done(format: Format, value: &Value, line: &str) -> Result<(), CliError> {
    output::print(format, value, |_| Ok(format!("{line}\n")))
}

/// The id of the item of `list` whose id, id prefix (as tables show it) or name is `arg`.
pub fn pick(list: &Value, arg: &str, what: &str) -> Result<String, CliError> {
    let matches: Vec<String> = items(list)
        .filter(|item| {
            let id = text(&item["id"]);
            id == arg || text(&item["name"]) == arg || (arg.len() >= 8 && id.starts_with(arg))
        })
        .map(|item| text(&item["id"]))
        .collect();
    match &matches[..] {
        [id] => Ok(id.clone()),
        [] => Err(CliError::Api {
            status: 404,
            code: "not_found".into(),
            detail: format!("no {what} {arg}"),
        }),
        _ => Err(CliError::Api {
            status: 409,
            code: "ambiguous".into(),
            detail: format!("{} {what}s match {arg}: give an id", matches.len()),
        }),
    }
}

fn items(list: &Value) -> impl Iterator<Item = &Value> {
    list.as_array().into_iter().flatten()
}

pub fn text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => "-".to_owned(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_item_is_named_by_its_id_its_short_id_or_its_name() {
        let list = json!([
            {"id": "0b6f8a4e-1111-2222-3333-444455556666", "name": "laptop"},
            {"id": "7c1d0000-1111-2222-3333-444455556666", "name": "ci"}
        ]);
        assert_eq!(
            pick(&list, "laptop", "key").unwrap(),
            "0b6f8a4e-1111-2222-3333-444455556666"
        );
        assert_eq!(
            pick(&list, "7c1d0000", "key").unwrap(),
            "7c1d0000-1111-2222-3333-444455556666"
        );
        assert_eq!(pick(&list, "nope", "key").unwrap_err().exit_code(), 1);
    }
}
