//! The lifecycle sweep, one in the whole deployment (a lease): every
//! `PROVISIONING_EXPIRY_SWEEP_SECS` it warns about VMs whose expiry comes
//! (`PROVISIONING_EXPIRY_WARNINGS`), queues the destroy of each expired VM, and marks
//! `unreachable` the VMs that did not phone home within `PROVISIONING_BOOT_TIMEOUT`. All
//! as the `system` actor. It finds VMs in the read model and decides on the aggregate, so a
//! VM extended since the read model was written is not destroyed, and a second sweep (a
//! replica that took the lease over) adds nothing.

use std::time::Duration;

use domain::provisioning::{expiry, Provisioning, ProvisioningCommand, ProvisioningError, VmId};
use store::{Actor, CommandError, Metadata, PgPool};
use time::OffsetDateTime;
use tokio_util::sync::CancellationToken;

/// VMs handled per kind and pass; the rest in the next passes.
const BATCH: i64 = 500;

pub struct Sweep {
    pub pool: PgPool,
    pub every: Duration,
    /// How long before its expiry each warning is sent.
    pub warnings: Vec<Duration>,
    /// How long a VM may take from its create's success to its phone-home.
    pub boot_timeout: Duration,
}

impl Sweep {
    pub async fn run(self, cancel: CancellationToken) {
        store::lease::every(&self.pool, "lifecycle-sweep", &cancel, self.every, || {
            self.pass()
        })
        .await;
    }

    /// One pass; returns how many commands changed a VM.
    #[tracing::instrument(skip_all, err)]
    pub async fn pass(&self) -> Result<usize, store::StoreError> {
        let now = OffsetDateTime::now_utc();
        let mut changed = 0;
        for (vm, view) in store::life::expiring(&self.pool, &self.warnings, BATCH).await? {
            let Some(expires_at) = view.expires_at() else {
                continue;
            };
            let command = if expires_at <= now {
                ProvisioningCommand::Expire { at: now }
            } else {
                let due = view
                    .lifecycle
                    .expiry
                    .unwrap_or(domain::provisioning::Expiry::new(expires_at))
                    .due_warning(&self.warnings, now);
                let Some(before) = due else { continue };
                ProvisioningCommand::WarnExpiry { before, at: now }
            };
            changed += self.execute(vm, command).await?;
        }
        for (vm, view) in store::life::boot_overdue(&self.pool, self.boot_timeout, BATCH).await? {
            let Some(boot) = &view.lifecycle.boot else {
                continue;
            };
            let reason = format!(
                "the VM did not phone home within {} of its creation",
                expiry::format_duration(self.boot_timeout)
            );
            let command = ProvisioningCommand::MarkUnreachable {
                job_id: boot.job,
                reason,
            };
            changed += self.execute(vm, command).await?;
        }
        Ok(changed)
    }

    /// Runs `command` as the system; 1 if it recorded events. A refusal (the VM moved on
    /// since the read model showed it) is no error.
    async fn execute(
        &self,
        vm: VmId,
        command: ProvisioningCommand,
    ) -> Result<usize, store::StoreError> {
        let what = command_name(&command);
        let metadata = Metadata::new(Actor::System, format!("{vm}/{what}"));
        match store::execute::<Provisioning>(&self.pool, vm, command, &metadata).await {
            Ok(committed) if committed.events.is_empty() => Ok(0),
            Ok(_) => {
                tracing::info!(%vm, what, "lifecycle sweep");
                Ok(1)
            }
            Err(CommandError::Rejected(ProvisioningError::NotExpired)) => Ok(0),
            Err(CommandError::Rejected(e)) => {
                tracing::info!(%vm, what, error = %e, "lifecycle sweep: refused");
                Ok(0)
            }
            Err(CommandError::Store(e)) => Err(e),
            Err(e) => {
                tracing::warn!(%vm, what, error = %e, "lifecycle sweep: not recorded, next pass");
                Ok(0)
            }
        }
    }
}

fn command_name(command: &ProvisioningCommand) -> &'static str {
    match command {
        ProvisioningCommand::Expire { .. } => "expire",
        ProvisioningCommand::WarnExpiry { .. } => "warn-expiry",
        _ => "mark-unreachable",
    }
}
