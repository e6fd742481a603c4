//! Taskservs: the catalog's definitions (files, versioned with the deployment) with what
//! admins disabled per provider (events of the `Catalog` aggregate); a request's taskservs
//! resolved into a plan (dependencies, order, params, OS, size) and decided by the
//! policies; installs on a running VM, queued as its jobs.

use std::collections::BTreeSet;

use domain::catalog::CatalogCommand;
use domain::provisioning::{ProviderId, ProvisioningCommand, TemplateId, VmId};
use domain::taskservs::{PlannedTaskserv, TaskservName, TaskservRequest};

use crate::vms::{VmAfter, VmKey};
use crate::{App, Caller, Error, Outcome, Principal};

/// A taskserv of the catalog as callers see it: its definition, and the providers on
/// which an admin disabled it.
#[derive(Debug, Clone)]
pub struct TaskservListing {
    pub definition: ::taskservs::Definition,
    pub disabled_on: Vec<String>,
}

impl App {
    /// Every taskserv of the catalog, in registry order.
    pub async fn list_taskservs(&self) -> Result<Vec<TaskservListing>, Error> {
        let disabled = store::catalog::disabled_taskservs(&self.pool).await?;
        Ok(self
            .taskservs
            .definitions()
            .map(|d| TaskservListing {
                definition: d.clone(),
                disabled_on: disabled
                    .iter()
                    .filter(|(_, t)| t == d.name.as_str())
                    .map(|(p, _)| p.clone())
                    .collect(),
            })
            .collect())
    }

    /// An admin offers taskserv `name` on `provider`'s VMs, or stops offering it.
    pub async fn set_taskserv_enabled(
        &self,
        caller: &Caller,
        provider: ProviderId,
        name: TaskservName,
        enabled: bool,
    ) -> Result<Option<i64>, Error> {
        crate::users::admin_only(caller)?;
        if self.taskservs.get(&name).is_none() {
            return Err(Error::NotFound(format!("no taskserv {name}")));
        }
        let command = CatalogCommand::SetTaskservEnabled {
            provider,
            taskserv: name,
            enabled,
        };
        let committed = self.change_catalog(caller, vec![command]).await?;
        Ok(committed.last_position())
    }

    /// The plan of `requests` for a VM of `template`: the closure of their requirements in
    /// order, each allowed on the provider and by the policies. A refusal names the
    /// taskserv: invalid (`422`) for what the catalog refuses, forbidden (`403`, naming the
    /// policy) for what the policies do.
    pub(crate) async fn plan_taskservs(
        &self,
        principal: &Principal,
        requests: &[TaskservRequest],
        template: &store::catalog::TemplateRow,
    ) -> Result<Vec<PlannedTaskserv>, Error> {
        if requests.is_empty() {
            return Ok(vec![]);
        }
        let disabled: BTreeSet<(String, String)> = store::catalog::disabled_taskservs(&self.pool)
            .await?
            .into_iter()
            .collect();
        let enabled = |name: &TaskservName, provider: &str| {
            !disabled.contains(&(provider.to_owned(), name.as_str().to_owned()))
        };
        let target = ::taskservs::Target {
            provider: template.provider_id.clone(),
            os: ::taskservs::os_family(&template.image_name).map(str::to_owned),
            cpu: template.cpu.max(0) as u32,
            ram_gb: template.ram_gb.max(0) as u32,
            disk_gb: template.storage_gb.max(0) as u32,
        };
        let plan = self
            .taskservs
            .resolve(requests, &target, &enabled)
            .map_err(|refusal| Error::invalid("taskservs", refusal.to_string()))?;
        let book = self.policies.book();
        for step in &plan {
            let category = self
                .taskservs
                .get(&step.name)
                .map_or("", |d| d.category.as_str());
            if let Err(denied) =
                book.may_install(principal, step.name.as_str(), category, &target.provider)
            {
                self.policies.denied(&denied.policy);
                tracing::warn!(policy = %denied.policy, user = %principal.user, taskserv = %step.name, "taskserv denied by policy");
                return Err(Error::Forbidden {
                    detail: format!("taskserv {}: {denied}", step.name),
                    policy: Some(denied.policy),
                });
            }
        }
        Ok(plan)
    }

    /// Installs taskservs on the caller's running VM: the plan resolved against the
    /// catalog as it is now, then an install job queued (after the VM's other jobs).
    #[tracing::instrument(skip_all, fields(vm_id = %vm))]
    pub async fn install_taskservs(
        &self,
        caller: &Caller,
        vm: VmId,
        requests: Vec<TaskservRequest>,
        key: VmKey<'_>,
    ) -> Result<Outcome<VmAfter>, Error> {
        self.visible(&caller.principal, vm).await?;
        if requests.is_empty() {
            return Err(Error::invalid("taskservs", "name at least one taskserv"));
        }
        let (current, _) =
            store::load::<domain::provisioning::Provisioning>(&self.pool, &vm.to_string()).await?;
        let spec = current
            .spec()
            .ok_or_else(|| Error::NotFound(format!("no VM {vm}")))?;
        let template = self.template_of(&spec.provider, &spec.template).await?;
        let plan = self
            .plan_taskservs(&caller.principal, &requests, &template)
            .await?;
        let command = ProvisioningCommand::InstallTaskservs { taskservs: plan };
        self.command_vm(caller, vm, command, key).await
    }

    /// The template a VM was made from, as the catalog has it now.
    async fn template_of(
        &self,
        provider: &ProviderId,
        template: &TemplateId,
    ) -> Result<store::catalog::TemplateRow, Error> {
        store::catalog::template(&self.pool, provider, template)
            .await?
            .ok_or_else(|| {
                let reason = format!(
                    "the VM's template {}/{} is no longer in the catalog",
                    provider.as_str(),
                    template.as_str()
                );
                Error::invalid("taskservs", reason)
            })
    }
}
