//! Commands on a VM asked for by name: destroy, retry, refresh, archive.

use domain::provisioning::{ProvisioningCommand, VmId};

use super::{VmAfter, VmKey};
use crate::{App, Caller, Error, Outcome};

impl App {
    /// Destroys a VM, after the jobs that run or wait; asked again while one waits, it
    /// answers with that one.
    #[tracing::instrument(skip_all, fields(vm_id = %vm))]
    pub async fn destroy_vm(
        &self,
        caller: &Caller,
        vm: VmId,
        key: VmKey<'_>,
    ) -> Result<Outcome<VmAfter>, Error> {
        let command = ProvisioningCommand::RequestDestroy;
        self.command_vm(caller, vm, command, key).await
    }

    /// Runs the VM's failed (or cancelled) create or destroy again.
    #[tracing::instrument(skip_all, fields(vm_id = %vm))]
    pub async fn retry_vm(
        &self,
        caller: &Caller,
        vm: VmId,
        key: VmKey<'_>,
    ) -> Result<Outcome<VmAfter>, Error> {
        let command = ProvisioningCommand::Retry;
        self.command_vm(caller, vm, command, key).await
    }

    /// Reads what the cloud has of the VM, after the jobs before it.
    #[tracing::instrument(skip_all, fields(vm_id = %vm))]
    pub async fn refresh_vm(
        &self,
        caller: &Caller,
        vm: VmId,
        key: VmKey<'_>,
    ) -> Result<Outcome<VmAfter>, Error> {
        let command = ProvisioningCommand::Refresh;
        self.command_vm(caller, vm, command, key).await
    }

    /// Archives a destroyed VM (it leaves the default lists); again, it records nothing.
    #[tracing::instrument(skip_all, fields(vm_id = %vm))]
    pub async fn archive_vm(
        &self,
        caller: &Caller,
        vm: VmId,
        key: VmKey<'_>,
    ) -> Result<Outcome<VmAfter>, Error> {
        let command = ProvisioningCommand::Archive;
        self.command_vm(caller, vm, command, key).await
    }
}
