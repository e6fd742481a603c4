//! NAIC's VM objects and its VM reads: `GET /api/vm` and `GET /api/vm/:vmId`.

use std::collections::HashMap;

use axum::extract::{Path, State};
use axum::Json;
use domain::provisioning::{ProviderId, VmId, VmSpec};
use serde::Serialize;
use serde_json::json;
use store::catalog::{ProviderRow, TemplateRow};
use store::ssh_keys::SshKeyRow;
use store::views::{ListFilter, VmRow};
use uuid::Uuid;

use super::shapes::{iso, template_id, NaicKey, NaicTemplate};
use super::status::naic_status_of;
use crate::auth::Principal;
use crate::{ApiError, AppState};

/// A VM as NAIC's frontend reads it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NaicVm {
    pub vm_id: Uuid,
    pub user_id: Uuid,
    pub template_id: String,
    pub vm_name: String,
    pub status: &'static str,
    pub ipv4_address: Option<String>,
    pub ipv6_address: Option<String>,
    pub public_key_id: Option<Uuid>,
    /// Hours, as requested.
    pub duration: i64,
    pub ip_ranges: Vec<String>,
    /// `{archived, applications: []}`.
    pub metadata: serde_json::Value,
    /// `expires_at - duration`: the frontend's remaining time (`startedAt + duration`) is
    /// then the platform's `expires_at`, extensions included.
    pub started_at: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    pub vm_template: NaicTemplate,
    /// Only in `GET /api/vm/:vmId`, as NAIC answers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub public_key: Option<NaicKey>,
}

/// The catalog and the caller's keys, read once for a whole answer.
pub(crate) struct Lookup {
    providers: HashMap<String, ProviderRow>,
    templates: HashMap<(String, String), TemplateRow>,
    keys: HashMap<String, SshKeyRow>,
}

impl Lookup {
    pub(crate) async fn load(state: &AppState, owner: &str) -> Result<Self, ApiError> {
        let providers = store::catalog::providers(&state.app.pool).await?;
        let mut templates = HashMap::new();
        for p in &providers {
            let Ok(id) = ProviderId::parse(&p.id) else {
                continue;
            };
            for t in store::naic::all_templates(&state.app.pool, &id).await? {
                templates.insert((t.provider_id.clone(), t.id.clone()), t);
            }
        }
        let keys = store::ssh_keys::list(&state.app.pool, owner).await?;
        Ok(Lookup {
            providers: providers.into_iter().map(|p| (p.id.clone(), p)).collect(),
            templates,
            keys: keys
                .into_iter()
                .map(|k| (k.fingerprint.clone(), k))
                .collect(),
        })
    }

    /// The VM's template with its provider; one made of the VM's own request when the
    /// catalog no longer has it (the frontend needs one for every VM).
    fn template(&self, row: &VmRow, spec: Option<&VmSpec>) -> NaicTemplate {
        let provider = self.providers.get(&row.provider);
        if let Some(t) = self
            .templates
            .get(&(row.provider.clone(), row.template.clone()))
        {
            return NaicTemplate::of(t, provider);
        }
        let gone = TemplateRow {
            provider_id: row.provider.clone(),
            id: row.template.clone(),
            name: row.template.clone(),
            description: String::new(),
            flavor_name: spec.map(|s| s.flavor_name.clone()).unwrap_or_default(),
            image_name: spec.map(|s| s.image_name.clone()).unwrap_or_default(),
            cpu: 0,
            ram_gb: 0,
            storage_gb: 0,
            gpu: None,
            tags: vec![],
            enabled: false,
            username: spec.map_or_else(|| "ubuntu".into(), |s| s.username.clone()),
            sort_order: 0,
        };
        let provider = provider.cloned().unwrap_or_else(|| ProviderRow {
            id: row.provider.clone(),
            name: row.provider.clone(),
            enabled: false,
            sort_order: 0,
        });
        NaicTemplate::of(&gone, Some(&provider))
    }

    /// The VM's key as the caller registered it; the VM's own copy, named by its comment,
    /// when it is no longer registered.
    fn key(&self, spec: &VmSpec, user: Uuid) -> NaicKey {
        let key = &spec.ssh_public_key;
        if let Some(row) = self.keys.get(&key.fingerprint()) {
            return NaicKey::of(row, user);
        }
        let comment = key.as_str().split_whitespace().nth(2);
        NaicKey {
            key_id: None,
            public_key: key.as_str().to_owned(),
            name: comment.unwrap_or("ssh-key").to_owned(),
            user_id: user,
            created_at: None,
            updated_at: None,
        }
    }

    pub(crate) fn vm(&self, row: VmRow, spec: Option<&VmSpec>, with_key: bool) -> NaicVm {
        let vm_template = self.template(&row, spec);
        let key = spec.map(|s| self.key(s, row.owner));
        let duration = spec.map_or(0, |s| i64::from(s.duration_hours.get()));
        let started_at = row
            .expires_at
            .map(|at| iso(at - time::Duration::hours(duration)));
        NaicVm {
            vm_id: row.id,
            user_id: row.owner,
            template_id: template_id(&row.provider, &row.template),
            vm_name: row.name,
            status: naic_status_of(&row.status),
            ipv4_address: row.ip,
            ipv6_address: None,
            public_key_id: key.as_ref().and_then(|k| k.key_id),
            duration,
            ip_ranges: spec.map_or_else(Vec::new, |s| {
                s.allow_ssh_from.iter().map(|c| c.to_string()).collect()
            }),
            metadata: json!({"archived": row.archived, "applications": []}),
            started_at,
            created_at: iso(row.created_at),
            updated_at: iso(row.updated_at),
            vm_template,
            public_key: with_key.then(|| {
                key.unwrap_or_else(|| NaicKey {
                    key_id: None,
                    public_key: String::new(),
                    name: "ssh-key".into(),
                    user_id: row.owner,
                    created_at: None,
                    updated_at: None,
                })
            }),
        }
    }
}

/// The caller's own VMs, newest first, archived ones included (the dashboard filters them).
pub async fn list_vms(
    State(state): State<AppState>,
    principal: Principal,
) -> Result<Json<Vec<NaicVm>>, ApiError> {
    let mut filter = ListFilter {
        archived: None,
        limit: 500,
        owner: Some(principal.user),
        ..Default::default()
    };
    let mut rows = Vec::new();
    loop {
        let page = store::views::list(&state.app.pool, &filter).await?;
        let full = page.len() as i64 == filter.limit;
        filter.after = page.last().map(|last| (last.created_at, last.id));
        rows.extend(page);
        if !full {
            break;
        }
    }
    let ids: Vec<Uuid> = rows.iter().map(|r| r.id).collect();
    let specs: HashMap<Uuid, VmSpec> = store::naic::specs(&state.app.pool, &ids)
        .await?
        .into_iter()
        .collect();
    let lookup = Lookup::load(&state, &principal.owner_key()).await?;
    Ok(Json(
        rows.into_iter()
            .map(|row| {
                let spec = specs.get(&row.id);
                lookup.vm(row, spec, false)
            })
            .collect(),
    ))
}

/// One VM the caller may see, with its key; another user's is not found.
pub async fn get_vm(
    State(state): State<AppState>,
    principal: Principal,
    Path(id): Path<String>,
) -> Result<Json<NaicVm>, ApiError> {
    let not_found = || ApiError::NotFound(format!("no VM {id}"));
    let vm: VmId = id.parse().map_err(|_| not_found())?;
    let row = store::views::get(&state.app.pool, vm)
        .await?
        .filter(|row| principal.may_see(&domain::identity::UserId::new(row.owner)))
        .ok_or_else(not_found)?;
    let spec = store::naic::specs(&state.app.pool, &[row.id])
        .await?
        .into_iter()
        .next()
        .map(|(_, spec)| spec);
    // The owner's keys: an admin reading another user's VM sees its owner's key name.
    let lookup = Lookup::load(&state, &row.owner.to_string()).await?;
    Ok(Json(lookup.vm(row, spec.as_ref(), true)))
}
