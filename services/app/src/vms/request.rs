//! Requesting a VM: the request checked field by field against the catalog, the caller's
//! keys and the network rules, then the policies' decision and the caller's limits, then
//! recorded once (a retry with the same VM id or idempotency key answers as the first).

use domain::provisioning::{
    DurationHours, ProviderId, Provisioning, ProvisioningCommand, ProvisioningError, SshPublicKey,
    Stamp, TemplateId, VmId, VmName, VmSpec, VmView,
};
use domain::Decide;
use store::CommandError;
use time::OffsetDateTime;

use super::{VmAfter, VmKey};
use crate::idempotency::{self, Outcome};
use crate::{App, Caller, Error};

/// A request for a VM, its values parsed.
#[derive(Debug, Clone)]
pub struct VmRequest {
    /// The id the client chose, if it did: the same request again is answered as the first.
    pub id: Option<VmId>,
    pub name: VmName,
    pub provider: ProviderId,
    pub template: TemplateId,
    pub ssh_key: SshKeyChoice,
    /// IPv4 networks, or `me` for the caller's address; checked against the platform's
    /// rules here.
    pub allow_ssh_from: Vec<String>,
    pub duration: DurationHours,
    /// Taskservs to install at boot, with their params; resolved into the VM's plan.
    pub taskservs: Vec<domain::taskservs::TaskservRequest>,
    /// The cluster whose node this VM is; set by the cluster coordinator only.
    pub cluster: Option<Box<domain::cluster::ClusterMember>>,
}

/// The VM's SSH key: given whole, or one the caller registered.
#[derive(Debug, Clone)]
pub enum SshKeyChoice {
    Key(SshPublicKey),
    /// The id of a registered key, as the client wrote it.
    Registered(String),
}

impl App {
    /// Requests a VM for the caller; it is created in the background.
    #[tracing::instrument(skip_all, fields(vm_id))]
    pub async fn request_vm(
        &self,
        caller: &Caller,
        input: VmRequest,
        key: VmKey<'_>,
    ) -> Result<Outcome<VmAfter>, Error> {
        if let Some(k) = &key {
            if let Some(kept) = idempotency::kept(&self.pool, k.key, k.request).await? {
                return Ok(Outcome::Replayed(kept));
            }
        }
        let spec = self.validate(&input, caller).await?;
        let vm = input.id.unwrap_or_default();
        tracing::Span::current().record("vm_id", tracing::field::display(vm));
        super::message_size::check(vm, &spec, &caller.request_id, self.bus.payload_limit())?;
        let command = ProvisioningCommand::Request {
            spec: spec.clone(),
            at: OffsetDateTime::now_utc(),
        };
        match self.run(caller, vm, command, &key, None).await {
            Ok(Some(done)) => Ok(Outcome::Done(done)),
            Ok(None) => self.answered_meanwhile(&key).await,
            Err(CommandError::Rejected(ProvisioningError::AlreadyRequested)) => {
                let done = self.requested_before(vm, &spec).await?;
                self.remember_write(caller.principal.user, done.position)
                    .await;
                Ok(Outcome::Done(done))
            }
            Err(e) => Err(crate::vm_command_failed(vm, e)),
        }
    }

    /// A request with the id of an existing VM: the first request's result again if it
    /// asked for the same, a conflict if not.
    async fn requested_before(&self, vm: VmId, spec: &VmSpec) -> Result<VmAfter, Error> {
        let exists = || Error::Conflict(format!("a VM with id {vm} exists already"));
        let (current, _) = store::load::<Provisioning>(&self.pool, &vm.to_string()).await?;
        let first = current.spec().ok_or_else(exists)?;
        if !same_request(first, spec) {
            return Err(Error::Conflict(format!(
                "a VM with id {vm} exists already, requested with other values"
            )));
        }
        let requested = store::projected::requested(&self.pool, vm)
            .await?
            .ok_or_else(exists)?;
        // The VM as its create left it: the answer the first request got.
        let events = Provisioning::default()
            .decide(
                ProvisioningCommand::Request {
                    spec: first.clone(),
                    at: self.first_request_time(vm, first).await?,
                },
                &(),
            )
            .map_err(Error::internal)?;
        let mut view = VmView::default();
        let stamp = Stamp {
            at: requested.first_at,
            actor: None,
        };
        for (sequence, event) in (1..).zip(&events) {
            view.update(sequence, stamp, event);
        }
        Ok(VmAfter {
            id: vm,
            spec: Some(first.clone()),
            lifecycle: view.lifecycle,
            archived: false,
            created_at: requested.first_at,
            updated_at: requested.last_at,
            position: Some(requested.last_position),
        })
    }

    /// The time the first create of `vm` was asked at, from its recorded expiry (extensions
    /// since leave the `Requested` event as it was), so its answer can be given again.
    async fn first_request_time(&self, vm: VmId, spec: &VmSpec) -> Result<OffsetDateTime, Error> {
        let first = store::vm_events(&self.pool, vm, 0, 1).await?;
        let expires_at = first
            .first()
            .and_then(|e| e.data.get("expires_at")?.as_str().map(str::to_owned))
            .and_then(|s| {
                OffsetDateTime::parse(&s, &time::format_description::well_known::Rfc3339).ok()
            });
        let lives = time::Duration::hours(spec.duration_hours.get().into());
        let requested = first.first().map(|e| e.recorded_at);
        expires_at
            .map(|e| e - lives)
            .or(requested)
            .ok_or_else(|| Error::NotFound(format!("no VM {vm}")))
    }

    /// Checks every field against the catalog, the keys and the network rules; returns the
    /// first problem, naming its field. Last, the policies and limits: a refusal names the
    /// policy and records nothing.
    async fn validate(&self, input: &VmRequest, caller: &Caller) -> Result<VmSpec, Error> {
        let owner = &caller.principal;
        let provider = &input.provider;
        self.check_provider(provider).await?;
        let row = store::catalog::template(&self.pool, provider, &input.template)
            .await?
            .filter(|t| t.enabled)
            .ok_or_else(|| {
                let reason = format!(
                    "{:?} is not an enabled template of {:?}",
                    input.template.as_str(),
                    provider.as_str()
                );
                Error::invalid("template", reason)
            })?;
        let ssh_public_key = match &input.ssh_key {
            SshKeyChoice::Key(key) => key.clone(),
            SshKeyChoice::Registered(id) => self.registered_key(owner, id).await?,
        };
        let allow_ssh_from = crate::network::allowed_networks(
            self.widest_prefix,
            &input.allow_ssh_from,
            &caller.client_addr,
        )?;
        let duration_hours = input.duration;
        crate::policy::admit(self, owner, &row, duration_hours.get().into()).await?;
        let taskservs = self.plan_taskservs(owner, &input.taskservs, &row).await?;
        Ok(VmSpec {
            name: input.name.clone(),
            provider: provider.clone(),
            template: input.template.clone(),
            image_name: row.image_name,
            flavor_name: row.flavor_name,
            ssh_public_key,
            allow_ssh_from,
            duration_hours,
            username: row.username,
            owner: owner.user,
            taskservs,
            cluster: input.cluster.clone(),
        })
    }
}

/// Whether two requests asked for the same VM: the fields a client sends. (The template's
/// image and flavor may have changed in the catalog since.)
fn same_request(a: &VmSpec, b: &VmSpec) -> bool {
    a.name == b.name
        && a.provider == b.provider
        && a.template == b.template
        && a.ssh_public_key == b.ssh_public_key
        && a.allow_ssh_from == b.allow_ssh_from
        && a.duration_hours == b.duration_hours
        && a.taskservs == b.taskservs
        // Another user's VM with this id is not theirs to read back.
        && a.owner == b.owner
}
