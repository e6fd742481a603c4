//! `/api/v1/vms`: requesting, reading, destroying and watching VMs.

mod create;
mod destroy;
mod history;
mod read;
mod stream;

pub use create::*;
pub use destroy::*;
pub use history::*;
pub use read::*;
pub use stream::*;

use axum::routing::get;
use axum::Router;
use domain::provisioning::VmId;
use serde::Serialize;
use time::OffsetDateTime;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::{ApiError, AppState};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/vms", get(list_vms).post(create_vm))
        .route("/vms/{id}", get(get_vm).delete(destroy_vm))
        .route("/vms/{id}/events", get(list_vm_events))
        .route("/vms/{id}/logs", get(list_vm_logs))
        .route("/vms/{id}/stream", get(stream_vm))
}

/// A VM as the read model shows it.
#[derive(Debug, Serialize, ToSchema)]
pub struct VmOut {
    pub id: Uuid,
    pub name: String,
    pub provider: String,
    pub template: String,
    /// One of `requested`, `provisioning`, `provisioned`, `failed`, `destroy_requested`,
    /// `destroying`, `destroyed`.
    pub status: String,
    /// The VM's address, from Terraform's `vm_ip` output, once provisioned.
    pub ip: Option<String>,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub updated_at: OffsetDateTime,
    /// Why the last job failed, as Terraform said it.
    pub last_error: Option<String>,
}

impl From<store::views::VmRow> for VmOut {
    fn from(row: store::views::VmRow) -> Self {
        Self {
            id: row.id,
            name: row.name,
            provider: row.provider,
            template: row.template,
            status: row.status,
            ip: row.ip,
            created_at: row.created_at,
            updated_at: row.updated_at,
            last_error: row.last_error,
        }
    }
}

fn parse_id(id: &str) -> Result<VmId, ApiError> {
    id.parse()
        .map_err(|_| ApiError::NotFound(format!("no VM {id:?}: ids are UUIDs")))
}

/// Answers a command with the VM as of that command, once the read model shows it too (so a
/// GET right after sees the effect). Gives up waiting after a few seconds (the projector
/// may be down); the command is committed either way.
async fn read_your_writes(
    state: &AppState,
    vm: VmId,
    metadata: &store::Metadata,
) -> Result<VmOut, ApiError> {
    // This command's last event: later ones (the runner is quick) are not its effect.
    let target = store::last_sequence_of(&state.pool, vm, &metadata.correlation_id).await?;
    crate::routes::wait_for_projection(target, "the VM's read model", || async {
        let row = store::views::get(&state.pool, vm).await?;
        Ok(row.map_or(0, |r| r.last_sequence as u64))
    })
    .await?;
    let (view, created_at, updated_at) = store::views::view_at(&state.pool, vm, target)
        .await?
        .ok_or_else(|| ApiError::internal(format!("VM {vm} has no events after a command")))?;
    let spec = view
        .spec
        .ok_or_else(|| ApiError::internal(format!("VM {vm} has no request")))?;
    Ok(VmOut {
        id: vm.as_uuid(),
        name: spec.name.as_str().to_owned(),
        provider: spec.provider.as_str().to_owned(),
        template: spec.template.as_str().to_owned(),
        status: view.lifecycle.status.as_str().to_owned(),
        ip: view.lifecycle.ip,
        created_at,
        updated_at,
        last_error: view.lifecycle.last_error,
    })
}
