//! How long a VM lives: a user extends it within their policies; an admin sets it.

use domain::provisioning::{expiry, ExtendLimit, ProvisioningCommand, VmId};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

use super::{VmAfter, VmKey};
use crate::{App, Caller, Error, Outcome, Principal};

impl App {
    /// Adds `hours` to the VM's expiry (counted from now if it has passed), as long as it
    /// then has at most a week left and the caller's policies would allow a create of that
    /// whole life (their longest duration counts from the VM's request).
    #[tracing::instrument(skip_all, fields(vm_id = %vm))]
    pub async fn extend_vm(
        &self,
        caller: &Caller,
        vm: VmId,
        hours: u16,
        key: VmKey<'_>,
    ) -> Result<Outcome<VmAfter>, Error> {
        // Another user's VM is not found, before a policy says anything of it.
        self.visible(&caller.principal, vm).await?;
        let at = OffsetDateTime::now_utc();
        let limit = self
            .lifetime_limit(&caller.principal, vm, hours, at)
            .await?;
        let command = ProvisioningCommand::Extend { hours, at, limit };
        let done = self.command_vm(caller, vm, command, key).await;
        if let Err(Error::Forbidden {
            policy: Some(policy),
            detail,
        }) = &done
        {
            crate::policy::denied_lifetime(self, &caller.principal, policy, detail);
        }
        done
    }

    /// Sets when the VM expires (admins only): earlier or later, within 366 days.
    #[tracing::instrument(skip_all, fields(vm_id = %vm))]
    pub async fn set_vm_expiry(
        &self,
        caller: &Caller,
        vm: VmId,
        expires_at: OffsetDateTime,
        key: VmKey<'_>,
    ) -> Result<Outcome<VmAfter>, Error> {
        if !caller.principal.is_admin() {
            return Err(Error::forbidden(
                "only admins may set a VM's expiry; extend it with POST /api/v1/vms/{id}/extend",
            ));
        }
        let command = ProvisioningCommand::SetExpiry {
            expires_at,
            at: OffsetDateTime::now_utc(),
        };
        self.command_vm(caller, vm, command, key).await
    }

    /// The latest the caller's policies let `vm` live (their longest duration counted from
    /// its request), for the aggregate to hold the extension to; refused now when the
    /// policies refuse its template for a life that long. Extensions the aggregate refuses
    /// anyway (out of bounds, a VM to be destroyed) are left to it.
    async fn lifetime_limit(
        &self,
        principal: &Principal,
        vm: VmId,
        hours: u16,
        at: OffsetDateTime,
    ) -> Result<Option<ExtendLimit>, Error> {
        let (Some(asked), Some(row)) = (
            self.asked(vm).await?,
            store::views::get(&self.pool, vm).await?,
        ) else {
            return Ok(None); // no such VM: the command answers it
        };
        let max = self.policies.book().limits(principal).max_hours;
        let limit = ExtendLimit {
            until: asked.at + time::Duration::hours(max.value.min(i32::MAX as u64) as i64),
            hours: max.value,
            policy: max.policy,
        };
        let from = row.expires_at.map_or(at, |e| e.max(at));
        let until = from + time::Duration::hours(hours.into());
        let in_bounds = (1..=168).contains(&hours) && until - at <= expiry::LONGEST;
        let ending =
            ["destroy_requested", "destroying", "destroyed"].contains(&row.status.as_str());
        if in_bounds && !ending {
            // Whole hours, rounded up: a create asks for whole hours too.
            let life = ((until - asked.at).whole_seconds().max(0) as u64).div_ceil(3600);
            crate::policy::admit_lifetime(self, principal, &asked.provider, &asked.template, life)
                .await?;
        }
        Ok(Some(limit))
    }

    /// The VM's request, from its `Requested` event (extensions leave it as it was): asked
    /// at its first expiry less the hours asked, or at its recording for an event without
    /// one.
    async fn asked(&self, vm: VmId) -> Result<Option<Asked>, Error> {
        let first = store::vm_events(&self.pool, vm, 0, 1).await?;
        let Some(event) = first.into_iter().next() else {
            return Ok(None);
        };
        let text = |pointer: &str| event.data.pointer(pointer).and_then(|v| v.as_str());
        let hours = event
            .data
            .pointer("/spec/duration_hours")
            .and_then(|v| v.as_i64());
        let expires_at = text("/expires_at").and_then(|t| OffsetDateTime::parse(t, &Rfc3339).ok());
        let at = match (expires_at, hours) {
            (Some(expires_at), Some(hours)) => expires_at - time::Duration::hours(hours),
            _ => event.recorded_at,
        };
        Ok(Some(Asked {
            at,
            provider: text("/spec/provider").unwrap_or_default().to_owned(),
            template: text("/spec/template").unwrap_or_default().to_owned(),
        }))
    }
}

/// What the VM's request recorded: when it was asked, and its provider and template.
struct Asked {
    at: OffsetDateTime,
    provider: String,
    template: String,
}
