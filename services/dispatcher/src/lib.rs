//! The dispatcher: a durable JetStream consumer of queued jobs, pulled one at a time and
//! only while a runner slot is free. For each job it claims the job through the VM
//! (`JobDispatched`), prepares the Terraform working directory from the event store, starts
//! the runner through an [`Executor`], and acks the job once the runner is started. A job
//! whose runner cannot be started is reported as failed, so the VM does not wait for ever.

pub mod cloud_init;
pub mod cluster_secret;
pub mod deploy_key;
mod executor;
pub mod install;
mod job_status;
mod kubernetes;
mod local_boot;
mod slots;
pub mod taskserv_boot;
mod workdir;

pub use executor::{Executor, ExecutorError, Launch, LaunchCredential, LocalExecutor};
pub use job_status::answer_job_status;
pub use kubernetes::{
    BusFailures, JobFailures, JobWatcher, KubernetesConfig, KubernetesExecutor, RunnerNatsAuth,
    RunnerResources, RunningJobs, StoreRunningJobs,
};
pub use local_boot::{BootSimulator, LocalBoot};
/// How long a runner retries a report when the daemon does not say (`RUNNER_PUBLISH_RETRY_SECS`).
pub use runner::DEFAULT_PUBLISH_RETRY as DEFAULT_RUNNER_PUBLISH_RETRY;
pub use workdir::{prepare, WorkdirError};

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bus::async_nats::jetstream::{AckKind, Message};
use bus::{Bus, JobMessage, RunnerMessage};
use domain::provisioning::{JobId, Provisioning, ProvisioningCommand, VmId};
use runner::env;
use secrecy::SecretString;
use store::{Actor, CommandError, Metadata, PgPool};
use tokio_util::sync::CancellationToken;

/// How often a job message being dispatched is reported in progress (a third of the
/// dispatcher consumer's ack wait in `nats/jetstream.toml`).
const PROGRESS_EVERY: Duration = Duration::from_secs(10);

#[derive(Clone)]
pub struct DispatcherConfig {
    /// Where the provider folders are: `<hcl_dir>/<provider>/`.
    pub hcl_dir: PathBuf,
    /// Where job working directories are made: `<work_dir>/<vm_id>/job-<n>/`.
    pub work_dir: PathBuf,
    pub nats_url: String,
    /// The NATS user local runners connect as, with `nats_url` stripped of the daemon's
    /// credentials; `None`: they get `nats_url` as it is.
    pub runner_nats_user: Option<(String, SecretString)>,
    /// `conn_str` of Terraform's `pg` backend, without a password.
    pub backend_conn_str: String,
    pub backend_password: Option<SecretString>,
    /// The Kubernetes Secret holding that password (Kubernetes executor).
    pub backend_secret: Option<registry::SecretRef>,
    pub terraform_bin: PathBuf,
    /// How long a runner sends a report again before it gives up
    /// (`PROVISIONING_RUNNER_PUBLISH_RETRY_SECS`, the runner's `RUNNER_PUBLISH_RETRY_SECS`).
    pub publish_retry: std::time::Duration,
    /// Each action's deadline and the cancel cool-off: a Kubernetes Job's
    /// `activeDeadlineSeconds` is the deadline plus the cool-off.
    pub job_limits: domain::provisioning::JobLimits,
    pub registry: Arc<registry::Registry>,
    /// Credential values for runners (local executor).
    pub credentials: Arc<registry::Credentials>,
    /// Where the VMs of create jobs call back; none: their cloud-init has no callbacks.
    /// Its key also derives each VM's deploy key, so install jobs need it.
    pub callbacks: Option<cloud_init::CallbackUrls>,
    /// Renders install jobs' scripts (the taskserv catalog); none: install jobs fail.
    pub install_scripts: Option<Arc<dyn install::InstallScripts>>,
    /// The port install jobs reach VMs' SSH at (`PROVISIONING_SSH_PORT`, 22).
    pub ssh_port: u16,
    /// The taskserv catalog, which renders the scripts of a create's plan; none: a create
    /// with taskservs fails, naming the first.
    pub taskservs: Option<Arc<taskservs::Catalog>>,
}

pub struct Dispatcher {
    pub config: DispatcherConfig,
    pub pool: PgPool,
    pub bus: Bus,
    pub executor: Arc<dyn Executor>,
    /// How many runners this dispatcher keeps running at once (`PROVISIONING_MAX_RUNNERS`).
    pub max_runners: usize,
    /// Who claims jobs (`JobDispatched`): host and process, for the audit trail.
    pub name: String,
    /// Each job's runner gets its job's key (`RUNNER_SIGNING_KEY`) to sign its reports.
    pub keys: bus::RunnerKeys,
}

impl Dispatcher {
    /// Takes jobs one at a time, each only once a runner slot is free, until cancelled.
    pub async fn run(self, cancel: CancellationToken) {
        slots::run(Arc::new(self), cancel).await;
    }

    /// Handles one job message; whether a runner was started for it (it then holds a slot).
    async fn dispatch(&self, message: Message) -> Result<bool, bus::async_nats::Error> {
        let job: JobMessage = match serde_json::from_slice(&message.payload) {
            Ok(job) => job,
            Err(e) => {
                tracing::error!(error = %e, subject = %message.subject, "dropping a job message that does not parse");
                message.ack().await?;
                return Ok(false);
            }
        };
        match in_progress(&message, self.dispatch_job(job.vm_id, job.job_id)).await {
            Ok(started) => {
                message.ack().await?;
                Ok(started)
            }
            Err(e) => {
                // Postgres or NATS is away for a moment: the job comes back later.
                tracing::warn!(error = %e, "could not dispatch the job; it will be delivered again");
                message
                    .ack_with(AckKind::Nak(Some(Duration::from_secs(5))))
                    .await?;
                Ok(false)
            }
        }
    }

    /// Claims the job through the VM (`JobDispatched`), then starts its runner with what the
    /// event store says: the message names the job, nothing more. A job taken already (a
    /// second delivery, another dispatcher), started or ended is left alone: no second
    /// runner, no new working directory over the running one's.
    #[tracing::instrument(skip_all, fields(%vm_id, %job_id), err)]
    async fn dispatch_job(
        &self,
        vm_id: VmId,
        job_id: JobId,
    ) -> Result<bool, bus::async_nats::Error> {
        let (vm, _) = store::load::<Provisioning>(&self.pool, &vm_id.to_string()).await?;
        let (Some(active), Some(spec)) = (vm.lifecycle().active_job, vm.spec()) else {
            tracing::info!("the VM has no active job; dropping the message");
            return Ok(false);
        };
        if active.id != job_id || active.dispatched || active.started {
            tracing::info!("the job was taken, started or ended already; dropping the message");
            return Ok(false);
        }
        // Heard of before the claim: if this process dies between claim and start, the
        // watchdog sees the claimed job silent and fails it (see docs/architecture.md).
        store::liveness::claim(&self.pool, vm_id, job_id, active.action).await?;
        let claim = ProvisioningCommand::ClaimJob {
            job_id,
            dispatcher: self.name.clone(),
        };
        let metadata = Metadata::new(Actor::Dispatcher, format!("{vm_id}/job/{job_id}"));
        match store::execute::<Provisioning>(&self.pool, vm_id, claim, &metadata).await {
            Ok(_) => {}
            Err(CommandError::Rejected(e)) => {
                tracing::info!(reason = %e, "the job is not ours to run; dropping the message");
                return Ok(false);
            }
            Err(e) => return Err(e.into()),
        }
        let job = JobMessage {
            vm_id,
            job_id,
            action: active.action,
            spec: spec.clone(),
        };
        let started = self.start(&job, vm.lifecycle()).await;
        telemetry::metrics().count_runner_start(job.spec.provider.as_str(), started.is_ok());
        match started {
            Ok(runner) => {
                if let Err(e) =
                    store::liveness::set_runner(&self.pool, vm_id, job_id, &runner).await
                {
                    tracing::warn!(error = %e, "could not record the runner's name");
                }
                Ok(true)
            }
            Err(reason) => {
                tracing::error!(%reason, "could not start the runner");
                report_failure(&self.bus, &self.keys, vm_id, job_id, reason).await?;
                Ok(false)
            }
        }
    }

    async fn start(
        &self,
        job: &JobMessage,
        vm: &domain::provisioning::Lifecycle,
    ) -> Result<String, String> {
        if job.action == domain::provisioning::JobAction::Install {
            return self.start_install(job, vm).await;
        }
        let provider = self
            .config
            .registry
            .provider(job.spec.provider.as_str())
            .filter(|p| p.enabled)
            .ok_or_else(|| {
                format!(
                    "provider {:?} is not enabled in the registry",
                    job.spec.provider.as_str()
                )
            })?;
        let mut credentials: Vec<LaunchCredential> = provider
            .credentials
            .iter()
            .map(|c| LaunchCredential {
                name: c.name.clone(),
                source: c.env.clone(),
                value: self.config.credentials.value(c),
                secret: c.secret.clone(),
            })
            .collect();
        if self.config.backend_password.is_some() || self.config.backend_secret.is_some() {
            credentials.push(LaunchCredential {
                name: env::BACKEND_PASSWORD.to_owned(),
                source: None,
                value: self.config.backend_password.clone(),
                secret: self.config.backend_secret.clone(),
            });
        }
        credentials.extend(self.runner_nats_password());
        // Copying the provider's folder is blocking file work: off the async workers.
        let workdir = {
            let (config, job, provider) = (self.config.clone(), job.clone(), provider.clone());
            tokio::task::spawn_blocking(move || prepare(&config, &job, &provider))
                .await
                .map_err(|e| format!("could not prepare the working directory: {e}"))?
                .map_err(|e| e.to_string())?
        };
        self.launch(job, workdir, credentials, None).await
    }

    /// Starts the runner of an install job: its install directory and the VM's deploy key,
    /// which each executor passes as it passes the job's signing key.
    async fn start_install(
        &self,
        job: &JobMessage,
        vm: &domain::provisioning::Lifecycle,
    ) -> Result<String, String> {
        let (workdir, key) = {
            let (config, job, vm) = (self.config.clone(), job.clone(), vm.clone());
            tokio::task::spawn_blocking(move || install::prepare(&config, &job, &vm))
                .await
                .map_err(|e| format!("could not prepare the install directory: {e}"))??
        };
        let credentials = self.runner_nats_password().into_iter().collect();
        self.launch(job, workdir, credentials, Some(key.private))
            .await
    }

    /// The local runners' NATS password, when they have a NATS user of their own.
    fn runner_nats_password(&self) -> Option<LaunchCredential> {
        let (_, password) = self.config.runner_nats_user.as_ref()?;
        Some(LaunchCredential {
            name: env::NATS_PASSWORD.to_owned(),
            source: Some("PROVISIONING_RUNNER_NATS_PASSWORD".to_owned()),
            value: Some(password.clone()),
            secret: None,
        })
    }

    /// Starts the runner of `job` in `workdir` with `credentials` and, for an install job,
    /// `deploy_key`, whose values it redacts.
    async fn launch(
        &self,
        job: &JobMessage,
        workdir: PathBuf,
        credentials: Vec<LaunchCredential>,
        deploy_key: Option<SecretString>,
    ) -> Result<String, String> {
        let secret_names = deploy_key
            .as_ref()
            .map(|_| env::DEPLOY_KEY)
            .into_iter()
            .chain(credentials.iter().map(|c| c.name.as_str()))
            .chain([env::SIGNING_KEY])
            .collect::<Vec<_>>()
            .join(",");
        let launch = Launch {
            vm_id: job.vm_id,
            job_id: job.job_id,
            action: job.action,
            provider: job.spec.provider.clone(),
            env: runner_env(
                &self.config,
                self.bus.subjects.prefix(),
                job,
                &workdir,
                secret_names,
            ),
            credentials,
            // Its job's key alone: a runner cannot sign for another job.
            signing_key: self.keys.for_job(job.vm_id, job.job_id),
            deploy_key,
            workdir,
            active_deadline: self.config.job_limits.deadline(job.action)
                + self.config.job_limits.cancel_cooloff,
        };
        self.executor
            .start(launch)
            .await
            .map_err(|e| format!("could not start the runner: {e}"))
    }
}

/// The environment of the runner of `job`, credentials apart: the same for every executor
/// (the Kubernetes one swaps the paths for the pod's).
pub(crate) fn runner_env(
    config: &DispatcherConfig,
    prefix: &str,
    job: &JobMessage,
    workdir: &std::path::Path,
    secret_names: String,
) -> Vec<(String, String)> {
    let mut vars = vec![
        (env::NATS_URL.into(), config.nats_url.clone()),
        (env::NATS_PREFIX.into(), prefix.to_owned()),
        (env::VM_ID.into(), job.vm_id.to_string()),
        (env::JOB_ID.into(), job.job_id.to_string()),
        (env::ACTION.into(), job.action.as_str().into()),
        (env::WORKDIR.into(), workdir.display().to_string()),
        (
            env::TERRAFORM_BIN.into(),
            config.terraform_bin.display().to_string(),
        ),
        (
            env::BACKEND_CONN_STR.into(),
            config.backend_conn_str.clone(),
        ),
        (
            env::PUBLISH_RETRY_SECS.into(),
            config.publish_retry.as_secs().to_string(),
        ),
        // Names only: the runner redacts these variables' values from what it publishes.
        (env::SECRET_ENV.into(), secret_names),
    ];
    if let Some((user, _)) = &config.runner_nats_user {
        vars[0].1 = bus::without_credentials(&config.nats_url);
        vars.push((env::NATS_USER.into(), user.clone()));
    }
    vars
}

/// Runs `work`, telling JetStream every `PROGRESS_EVERY` that the job message is still
/// being handled: the consumer's ack wait (30 s) is how long a job delivered to a
/// dispatcher that died, or to a pull its client dropped, waits before it comes again, so
/// it is short, and a slow dispatch (Postgres stalled, a Kubernetes API slow to answer)
/// must not see its message delivered to another dispatcher meanwhile.
async fn in_progress<T>(message: &Message, work: impl std::future::Future<Output = T>) -> T {
    tokio::pin!(work);
    let mut progress =
        tokio::time::interval_at(tokio::time::Instant::now() + PROGRESS_EVERY, PROGRESS_EVERY);
    loop {
        tokio::select! {
            done = &mut work => return done,
            _ = progress.tick() => {
                if let Err(e) = message.ack_with(AckKind::Progress).await {
                    tracing::warn!(error = %e, "could not tell JetStream the job is in progress");
                }
            }
        }
    }
}

/// Reports a job whose runner never ran, or ended without reporting, as failed, the way its
/// runner would have. A second result for a job that did report is refused by the VM.
pub async fn report_failure(
    bus: &Bus,
    keys: &bus::RunnerKeys,
    vm_id: VmId,
    job_id: JobId,
    reason: String,
) -> Result<(), bus::async_nats::Error> {
    let message = RunnerMessage {
        vm_id,
        job_id,
        report: bus::lost_job(reason).into(),
    };
    let key = keys.for_job(vm_id, job_id);
    Ok(bus.publish_runner_message(&key, &message).await?)
}
