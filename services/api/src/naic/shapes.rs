//! NAIC's objects, field for field as its frontend reads them (camelCase, `falvorName` as
//! NAIC spells it, arrays never null): the platform's rows put in NAIC's shapes.

use serde::Serialize;
use serde_json::Value;
use store::catalog::{ProviderRow, TemplateRow};
use store::ssh_keys::SshKeyRow;
use store::users::User;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;
use uuid::Uuid;

use domain::identity::Role;
use store::users::UserStatus;

/// A time as NAIC writes it (ISO 8601, as JavaScript's `Date` reads it).
pub(crate) fn iso(at: OffsetDateTime) -> String {
    at.format(&Rfc3339).unwrap_or_default()
}

/// The template id NAIC's create names: `<provider>:<template>`, stable as both ids are.
pub fn template_id(provider: &str, template: &str) -> String {
    format!("{provider}:{template}")
}

/// The provider and template of a [`template_id`].
pub fn parse_template_id(id: &str) -> Option<(&str, &str)> {
    id.split_once(':')
        .filter(|(p, t)| !p.is_empty() && !t.is_empty())
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NaicProvider {
    pub provider_id: String,
    pub provider_name: String,
    pub description: Option<String>,
    pub enabled: bool,
    pub display_order: i32,
    /// The catalog keeps no times: always null.
    pub created_at: Option<String>,
    pub updated_at: Option<String>,
}

impl From<&ProviderRow> for NaicProvider {
    fn from(p: &ProviderRow) -> Self {
        NaicProvider {
            provider_id: p.id.clone(),
            provider_name: p.name.clone(),
            description: None,
            enabled: p.enabled,
            display_order: p.sort_order,
            created_at: None,
            updated_at: None,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NaicTemplate {
    pub template_id: String,
    pub template_name: String,
    /// NAIC's spelling of `flavorName`.
    pub falvor_name: String,
    pub cpu: i32,
    /// GB.
    pub ram: i32,
    /// GB.
    pub storage: i32,
    /// The image.
    pub os: String,
    pub description: String,
    /// `{username, tags: [...]}` (and `type: "bare-metal"` for a template tagged so); `tags`
    /// is always an array (the frontend crashes without).
    pub metadata: Value,
    pub enabled: bool,
    pub provider_id: String,
    pub created_at: Option<String>,
    pub updated_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<NaicProvider>,
}

impl NaicTemplate {
    pub fn of(t: &TemplateRow, provider: Option<&ProviderRow>) -> Self {
        let mut metadata = serde_json::json!({"username": t.username, "tags": t.tags});
        if let Some(gpu) = &t.gpu {
            metadata["gpu"] = Value::String(gpu.clone());
        }
        // The frontend marks bare-metal machines (and warns of their long boot) by `type`.
        if t.tags.iter().any(|tag| tag == "bare-metal") {
            metadata["type"] = Value::String("bare-metal".into());
        }
        NaicTemplate {
            template_id: template_id(&t.provider_id, &t.id),
            template_name: t.name.clone(),
            falvor_name: t.flavor_name.clone(),
            cpu: t.cpu,
            ram: t.ram_gb,
            storage: t.storage_gb,
            os: t.image_name.clone(),
            description: t.description.clone(),
            metadata,
            enabled: t.enabled,
            provider_id: t.provider_id.clone(),
            created_at: None,
            updated_at: None,
            provider: provider.map(NaicProvider::from),
        }
    }
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NaicKey {
    /// Null for a key no longer registered (or given inline through `/api/v1`).
    pub key_id: Option<Uuid>,
    pub public_key: String,
    /// The frontend's ssh line names the private key file `<name>.pem`.
    pub name: String,
    pub user_id: Uuid,
    pub created_at: Option<String>,
    pub updated_at: Option<String>,
}

impl NaicKey {
    pub fn of(row: &SshKeyRow, user: Uuid) -> Self {
        NaicKey {
            key_id: Some(row.id),
            public_key: row.public_key.clone(),
            name: row.name.clone(),
            user_id: user,
            created_at: Some(iso(row.created_at)),
            updated_at: Some(iso(row.created_at)),
        }
    }
}

/// `userType`: the built-in admin (a super admin) and other super admins are
/// `SUPER_ADMIN`, admins `ADMIN`, everyone else `USER`.
pub fn user_type(role: Role) -> &'static str {
    match role {
        Role::User => "USER",
        Role::Admin => "ADMIN",
        Role::SuperAdmin => "SUPER_ADMIN",
    }
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NaicUser {
    pub user_id: Uuid,
    pub email: String,
    /// The email: the platform keeps no separate user name.
    pub username: String,
    pub first_name: String,
    pub last_name: String,
    pub user_type: &'static str,
    /// `ACTIVE` or `DISABLED`.
    pub status: &'static str,
    pub created_at: Option<String>,
    pub updated_at: Option<String>,
}

impl NaicUser {
    pub fn of(user: &User, created_at: Option<OffsetDateTime>) -> Self {
        let (first, last) = split_name(user.name.as_deref().unwrap_or_default());
        NaicUser {
            user_id: user.id.as_uuid(),
            email: user.email.clone(),
            username: user.email.clone(),
            first_name: first,
            last_name: last,
            user_type: user_type(user.role),
            status: match user.status {
                UserStatus::Active => "ACTIVE",
                UserStatus::Disabled => "DISABLED",
            },
            created_at: created_at.map(iso),
            updated_at: created_at.map(iso),
        }
    }
}

/// A full name as NAIC's given and family names: the first word, and the rest.
fn split_name(name: &str) -> (String, String) {
    let name = name.trim();
    match name.split_once(char::is_whitespace) {
        Some((first, rest)) => (first.to_owned(), rest.trim().to_owned()),
        None => (name.to_owned(), String::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_template_id_reads_back_as_its_provider_and_template() {
        let id = template_id("local", "small");
        assert_eq!(id, "local:small");
        assert_eq!(parse_template_id(&id), Some(("local", "small")));
        for wrong in ["", "local", ":small", "local:", "4f1c"] {
            assert_eq!(parse_template_id(wrong), None, "{wrong}");
        }
    }

    #[test]
    fn a_name_splits_into_given_and_family_names() {
        assert_eq!(
            split_name("Alice van Example"),
            ("Alice".into(), "van Example".into())
        );
        assert_eq!(split_name("Alice"), ("Alice".into(), String::new()));
        assert_eq!(split_name(""), (String::new(), String::new()));
    }
}
