//! The VM use cases: request, destroy, extend, set the expiry, archive, refresh, retry,
//! cancel and force-cancel a job. Each command is answered from its own events (never from
//! a read model, which may lag), with the position of its last event.

mod commands;
mod expiry;
mod jobs;
pub mod message_size;
mod request;

pub use request::{SshKeyChoice, VmRequest};

use domain::provisioning::{
    Lifecycle, Provisioning, ProvisioningCommand, ProvisioningError, VmId, VmSpec,
};
use store::CommandError;
use time::OffsetDateTime;

use crate::idempotency::{self, Idempotent, Outcome};
use crate::{App, Caller, Error};

/// A VM as a command left it, from the aggregate's own state.
#[derive(Debug, Clone)]
pub struct VmAfter {
    pub id: VmId,
    /// What was asked for; `None` only before the VM was requested.
    pub spec: Option<VmSpec>,
    pub lifecycle: Lifecycle,
    pub archived: bool,
    /// When the VM was requested.
    pub created_at: OffsetDateTime,
    /// When its last event was recorded.
    pub updated_at: OffsetDateTime,
    /// The position of the command's last event; `None` when it recorded nothing.
    pub position: Option<i64>,
}

/// The idempotency key of a VM command, if the caller sent one.
pub type VmKey<'a> = Option<Idempotent<'a, VmAfter>>;

/// The VM after a committed command, requested at `created_at`.
fn after(
    vm: VmId,
    committed: &store::Committed<Provisioning>,
    created_at: Option<OffsetDateTime>,
) -> VmAfter {
    let first = committed.events.first().map(|e| e.recorded_at);
    let last = committed.events.last().map(|e| e.recorded_at);
    let now = OffsetDateTime::now_utc();
    let state = &committed.state;
    VmAfter {
        id: vm,
        spec: state.spec().cloned(),
        lifecycle: state.lifecycle().clone(),
        archived: state.archived(),
        created_at: created_at.or(first).unwrap_or(now),
        updated_at: last.unwrap_or(now),
        position: committed.last_position(),
    }
}

impl App {
    /// Runs `command` on VM `vm`. With an idempotency key, the face's answer is kept with
    /// the events, in one transaction. `None`: a concurrent request holds the key.
    async fn run(
        &self,
        caller: &Caller,
        vm: VmId,
        command: ProvisioningCommand,
        key: &VmKey<'_>,
        created_at: Option<OffsetDateTime>,
    ) -> Result<Option<VmAfter>, CommandError<ProvisioningError>> {
        let answer = |c: &store::Committed<Provisioning>| {
            let kept = key
                .as_ref()
                .map(|k| (k.answer)(&after(vm, c, created_at)))
                .expect("a receipt only with a key");
            (kept.status, kept.body)
        };
        let receipt = key.as_ref().map(|k| store::Receipt {
            key: k.key,
            fingerprint: k.request,
            answer: &answer,
        });
        let metadata = caller.metadata();
        let committed = store::execute_with(
            &self.pool,
            vm,
            &(),
            vec![command],
            &metadata,
            receipt.as_ref(),
        )
        .await?;
        if key.is_some() {
            idempotency::expire_some(&self.pool);
        }
        let done = committed.map(|c| after(vm, &c, created_at));
        if let Some(done) = &done {
            self.remember_write(caller.principal.user, done.position)
                .await;
        }
        Ok(done)
    }

    /// Runs a caller's command on VM `vm`, which must have been requested; a retry with the
    /// same idempotency key gets the first answer.
    pub(crate) async fn command_vm(
        &self,
        caller: &Caller,
        vm: VmId,
        command: ProvisioningCommand,
        key: VmKey<'_>,
    ) -> Result<Outcome<VmAfter>, Error> {
        // Every face and process manager gets the same rule: another user's VM is not found.
        self.visible(&caller.principal, vm).await?;
        if let Some(k) = &key {
            if let Some(kept) = idempotency::kept(&self.pool, k.key, k.request).await? {
                return Ok(Outcome::Replayed(kept));
            }
        }
        // When the VM was requested: the answer shows it, as the read model does.
        let first = store::projected::requested(&self.pool, vm)
            .await?
            .ok_or_else(|| Error::NotFound(format!("no VM {vm}")))?;
        match self
            .run(caller, vm, command, &key, Some(first.first_at))
            .await
        {
            Ok(Some(done)) => Ok(Outcome::Done(done)),
            Ok(None) => self.answered_meanwhile(&key).await,
            Err(e) => Err(crate::vm_command_failed(vm, e)),
        }
    }

    /// Ok when VM `vm` exists and `principal` may see it; not found otherwise, as a VM
    /// that does not exist.
    pub async fn visible(&self, principal: &crate::Principal, vm: VmId) -> Result<(), Error> {
        match store::vm_owner(&self.pool, vm).await? {
            Some(owner) if principal.may_see(&owner) => Ok(()),
            _ => Err(Error::NotFound(format!("no VM {vm}"))),
        }
    }

    async fn answered_meanwhile(&self, key: &VmKey<'_>) -> Result<Outcome<VmAfter>, Error> {
        let k = key
            .as_ref()
            .ok_or_else(|| Error::internal("a receipt without a key"))?;
        let kept = idempotency::answered_meanwhile(&self.pool, k.key, k.request).await?;
        Ok(Outcome::Replayed(kept))
    }
}
