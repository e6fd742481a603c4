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

use axum::http::StatusCode;
use axum::routing::get;
use axum::Router;
use domain::provisioning::{
    ActiveJob, Lifecycle, Provisioning, ProvisioningCommand, ProvisioningError, VmId, VmSpec,
};
use serde::Serialize;
use time::OffsetDateTime;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::answers::Answered;
use crate::{ApiError, AppState};

pub fn router(state: AppState) -> Router<AppState> {
    Router::new()
        .route("/vms", get(list_vms).post(create_vm))
        .route("/vms/{id}", get(get_vm).delete(destroy_vm))
        .route("/vms/{id}/events", get(list_vm_events))
        .route("/vms/{id}/logs", get(list_vm_logs))
        .route("/vms/{id}/stream", get(stream_vm))
        .route_layer(axum::middleware::from_fn_with_state(
            state,
            crate::answers::wait_for_min_position,
        ))
}

// Deliberately the same fields as `store::views::VmRow`: the wire type is kept stable and
// documented (OpenAPI), the row follows the table.
/// A VM: as the read model shows it, or as a command left it.
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
    /// The job the VM waits for: none once it ended.
    pub job: Option<JobOut>,
}

/// A VM's current job.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct JobOut {
    /// The job's number within its VM, from 1.
    pub id: u32,
    /// `apply` or `destroy`.
    pub action: String,
    /// `queued`: waiting in the job queue for a free runner (the dispatcher runs at most
    /// `PROVISIONING_MAX_RUNNERS` at once, in order); `running`: a dispatcher claimed it and
    /// its runner started.
    pub state: String,
}

impl From<&ActiveJob> for JobOut {
    fn from(job: &ActiveJob) -> Self {
        JobOut {
            id: job.id.get(),
            action: job.action.as_str().to_owned(),
            state: match job.dispatched || job.started {
                true => "running",
                false => "queued",
            }
            .to_owned(),
        }
    }
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
            job: row.active_job.as_ref().map(|job| JobOut::from(&job.0)),
        }
    }
}

fn parse_id(id: &str) -> Result<VmId, ApiError> {
    id.parse()
        .map_err(|_| ApiError::NotFound(format!("no VM {id:?}: ids are UUIDs")))
}

/// The VM as the aggregate's state shows it: what a command answers, with no wait for the
/// read model. Computed as the read model computes it (the same lifecycle), so a GET that
/// waited for the command's position shows the same. `None` before the VM was requested.
fn vm_from_state(
    vm: VmId,
    state: &Provisioning,
    created_at: OffsetDateTime,
    updated_at: OffsetDateTime,
) -> Option<VmOut> {
    let spec = state.spec()?;
    Some(vm_out(vm, spec, state.lifecycle(), created_at, updated_at))
}

fn vm_out(
    vm: VmId,
    spec: &VmSpec,
    lifecycle: &Lifecycle,
    created_at: OffsetDateTime,
    updated_at: OffsetDateTime,
) -> VmOut {
    VmOut {
        id: vm.as_uuid(),
        name: spec.name.as_str().to_owned(),
        provider: spec.provider.as_str().to_owned(),
        template: spec.template.as_str().to_owned(),
        status: lifecycle.status.as_str().to_owned(),
        ip: lifecycle.ip.clone(),
        created_at,
        updated_at,
        last_error: lifecycle.last_error.clone(),
        job: lifecycle.active_job.as_ref().map(JobOut::from),
    }
}

/// The answer to a committed command on VM `vm`, requested at `created_at`: its state after
/// the command, and the position of the command's last event.
fn answer(
    vm: VmId,
    committed: &store::Committed<Provisioning>,
    created_at: Option<OffsetDateTime>,
) -> (u16, serde_json::Value) {
    let first = committed.events.first().map(|e| e.recorded_at);
    let last = committed.events.last().map(|e| e.recorded_at);
    let now = OffsetDateTime::now_utc();
    let created_at = created_at.or(first).unwrap_or(now);
    let body = vm_from_state(vm, &committed.state, created_at, last.unwrap_or(now));
    let body = serde_json::to_value(body).expect("a VM is plain data");
    (StatusCode::ACCEPTED.as_u16(), body)
}

/// Runs `command` on VM `vm` and answers from its own events. With an `Idempotency-Key`,
/// the answer is kept with the events, in one transaction; a request that lost the key to
/// a concurrent one with the same key gets that one's answer.
async fn run(
    state: &AppState,
    vm: VmId,
    command: ProvisioningCommand,
    metadata: &store::Metadata,
    key: Option<(&str, &str)>,
    created_at: Option<OffsetDateTime>,
) -> Result<Option<Answered>, store::CommandError<ProvisioningError>> {
    let answer = |c: &store::Committed<Provisioning>| answer(vm, c, created_at);
    let receipt = key.map(|(key, fingerprint)| store::Receipt {
        key,
        fingerprint,
        answer: &answer,
    });
    let pool = &state.pool;
    let committed =
        store::execute_with(pool, vm, &(), vec![command], metadata, receipt.as_ref()).await?;
    if key.is_some() {
        // Each new key clears a few expired ones, so the table stays as small as a day's keys.
        let pool = pool.clone();
        tokio::spawn(async move {
            if let Err(error) = store::idempotency::expire(&pool, 100).await {
                tracing::warn!(%error, "could not delete expired idempotency keys");
            }
        });
    }
    // `None`: another request holds the key; the caller answers with its kept answer.
    Ok(committed.map(|committed| {
        let (status, body) = answer(&committed);
        Answered {
            status: StatusCode::from_u16(status).expect("a valid status"),
            body,
            position: committed.last_position(),
        }
    }))
}

/// The answer kept under `key` by a concurrent request with the same key, which committed
/// first.
async fn answered_meanwhile(
    state: &AppState,
    key: Option<(&str, &str)>,
) -> Result<Answered, ApiError> {
    let (key, fingerprint) = key.ok_or_else(|| ApiError::internal("a receipt without a key"))?;
    crate::answers::kept_answer(state, key, fingerprint)
        .await?
        .ok_or_else(|| {
            ApiError::Unavailable(format!("a request with Idempotency-Key {key:?} is running"))
        })
}
