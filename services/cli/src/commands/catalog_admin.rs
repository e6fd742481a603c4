//! `admin catalog`: offering a provider, a template or a taskserv, or no longer, through
//! the admin API. Each prints the entry as the API answers it.

use serde_json::{json, Value};

use crate::args::{CatalogCommand, Format};
use crate::client::Api;
use crate::error::CliError;
use crate::output::{self, fields};

pub async fn catalog(api: &Api, format: Format, command: &CatalogCommand) -> Result<(), CliError> {
    let (path, enabled, put) = match command {
        CatalogCommand::Providers(switch) => {
            let (entry, enabled) = switch.parts();
            (
                format!("/api/v1/admin/providers/{}", segment(&entry.provider)),
                enabled,
                false,
            )
        }
        CatalogCommand::Templates(switch) => {
            let (entry, enabled) = switch.parts();
            (
                format!(
                    "/api/v1/admin/templates/{}/{}",
                    segment(&entry.provider),
                    segment(&entry.template)
                ),
                enabled,
                false,
            )
        }
        CatalogCommand::Taskserv(switch) => {
            let (entry, enabled) = switch.parts();
            (
                format!(
                    "/api/v1/admin/providers/{}/taskservs/{}",
                    segment(&entry.provider),
                    segment(&entry.name)
                ),
                enabled,
                true,
            )
        }
    };
    let body = json!({ "enabled": enabled });
    let answer = if put {
        api.put(&path, &body).await?
    } else {
        api.patch(&path, &body).await?
    };
    output::print(format, &answer, |_| Ok(summary(&answer)))
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
