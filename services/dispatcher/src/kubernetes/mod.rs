//! Runs each job's runner as a batch/v1 Job. The working directory travels in a ConfigMap
//! owned by the Job, the job's signing key (and an install job's deploy key) in a Secret
//! owned by the Job; credentials (the runner's NATS user's included) are references to
//! Secrets, never values. The runner reports over NATS; what it cannot report (its image
//! will not pull, it was OOM-killed or evicted, its Job failed, ran past its deadline or was
//! deleted) the [`JobWatcher`] sees on the Jobs and pods and reports for it, and its
//! reconciler reports the jobs whose Job vanished while nobody watched.

mod conditions;
#[cfg(test)]
mod deploy_files;
mod follow;
mod job_secret;
pub(crate) mod manifest;
mod reporting;
#[cfg(test)]
mod tests;
mod watcher;

pub use reporting::{BusFailures, JobFailures, RunningJobs, StoreRunningJobs};
pub use watcher::JobWatcher;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{DeleteParams, ListParams, PostParams};
use kube::{Api, Client};

use crate::{Executor, ExecutorError, Launch};

/// Where and how runner Jobs are made.
#[derive(Debug, Clone)]
pub struct KubernetesConfig {
    pub namespace: String,
    /// The image of the runner (`provisioning-runner` and Terraform).
    pub runner_image: String,
    /// `ttlSecondsAfterFinished`: how long a finished Job (and its pod's logs) stays.
    pub job_ttl_secs: i32,
    pub resources: RunnerResources,
    /// The Secret holding the Terraform backend password (`RUNNER_BACKEND_PASSWORD`).
    pub backend_secret: Option<registry::SecretRef>,
    /// The NATS URL runners get; `None`: the daemon's, without its credentials.
    pub runner_nats_url: Option<String>,
    /// Who runners are to NATS; `None`: whoever the URL says (nobody, once stripped).
    pub runner_nats_auth: Option<RunnerNatsAuth>,
    /// How often the reconciler compares the running jobs with the Jobs that exist.
    pub reconcile_every: std::time::Duration,
}

/// The runners' own NATS user, from a Secret: the Job spec holds a reference, never a value.
#[derive(Debug, Clone)]
pub enum RunnerNatsAuth {
    /// A user (`NATS_USER`) and the Secret key holding its password (`NATS_PASSWORD`).
    Password {
        user: String,
        password: registry::SecretRef,
    },
    /// The Secret key holding a NATS credentials file, mounted read-only (`NATS_CREDS_FILE`).
    CredentialsFile(registry::SecretRef),
}

impl KubernetesConfig {
    pub const DEFAULT_NAMESPACE: &'static str = "default";
    pub const DEFAULT_JOB_TTL_SECS: i32 = 3600;
    pub const DEFAULT_RECONCILE_EVERY: std::time::Duration = std::time::Duration::from_secs(60);

    /// The defaults, for the given runner image.
    pub fn new(runner_image: impl Into<String>) -> Self {
        Self {
            namespace: Self::DEFAULT_NAMESPACE.into(),
            runner_image: runner_image.into(),
            job_ttl_secs: Self::DEFAULT_JOB_TTL_SECS,
            resources: RunnerResources::default(),
            backend_secret: None,
            runner_nats_url: None,
            runner_nats_auth: None,
            reconcile_every: Self::DEFAULT_RECONCILE_EVERY,
        }
    }
}

/// Requests and limits of the runner container, as Kubernetes quantities.
#[derive(Debug, Clone)]
pub struct RunnerResources {
    pub cpu_request: String,
    pub memory_request: String,
    pub cpu_limit: String,
    pub memory_limit: String,
}

impl Default for RunnerResources {
    /// Terraform with one cloud provider plugin: mostly waiting on the cloud's API, but a
    /// provider plugin can take a few hundred MiB.
    fn default() -> Self {
        Self {
            cpu_request: "250m".into(),
            memory_request: "256Mi".into(),
            cpu_limit: "1".into(),
            memory_limit: "1Gi".into(),
        }
    }
}

pub struct KubernetesExecutor {
    client: Client,
    config: KubernetesConfig,
    runners: Runners,
}

/// The runner Jobs of one namespace, and which of them this process deleted itself, so that
/// the watcher does not take its own `stop` for a Job deleted by someone else.
#[derive(Clone)]
pub(crate) struct Runners {
    client: Client,
    namespace: String,
    stopped: Arc<Mutex<HashSet<String>>>,
}

impl Runners {
    fn jobs(&self) -> Api<Job> {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    fn pods(&self) -> Api<Pod> {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    /// The Job name of a runner `start` named, if it is one of this namespace.
    fn job_name<'a>(&self, runner: &'a str) -> Result<&'a str, ExecutorError> {
        runner
            .strip_prefix("kubernetes:")
            .and_then(|rest| rest.strip_prefix(self.namespace.as_str()))
            .and_then(|rest| rest.strip_prefix('/'))
            .filter(|name| !name.is_empty())
            .ok_or_else(|| ExecutorError(format!("{runner:?} is not a Job of this executor")))
    }

    /// Deletes the pods of Job `name` (the Job controller labels them `job-name`) with
    /// `grace` seconds between SIGTERM and SIGKILL. None left is no error.
    async fn delete_pods(&self, name: &str, grace: u32) -> Result<(), ExecutorError> {
        let params = DeleteParams::background().grace_period(grace);
        let pods = ListParams::default().labels(&format!("job-name={name}"));
        match self.pods().delete_collection(&params, &pods).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
            Err(e) => Err(ExecutorError(format!(
                "could not delete the pods of Job {}/{name}: {e}",
                self.namespace
            ))),
        }
    }

    /// Deletes Job `name` with background propagation (the ConfigMap it owns goes too), then
    /// its pods with `grace` seconds: the garbage collector would give them their own
    /// grace period. A Job already gone is no error.
    async fn delete_job(&self, name: &str, grace: u32) -> Result<(), ExecutorError> {
        self.stopped
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(name.to_owned());
        match self.jobs().delete(name, &DeleteParams::background()).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            Err(e) => {
                return Err(ExecutorError(format!(
                    "could not delete Job {}/{name}: {e}",
                    self.namespace
                )))
            }
        }
        self.delete_pods(name, grace).await
    }

    /// Whether this process deleted Job `name`; forgets it (its deletion was seen).
    fn forget_stopped(&self, name: &str) -> bool {
        self.stopped
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(name)
    }
}

impl KubernetesExecutor {
    pub fn new(client: Client, config: KubernetesConfig) -> Self {
        let runners = Runners {
            client: client.clone(),
            namespace: config.namespace.clone(),
            stopped: Arc::default(),
        };
        Self {
            client,
            config,
            runners,
        }
    }

    /// The watcher and reconciler of this executor's Jobs, reporting to `failures` and
    /// reading the running jobs from `running`.
    pub fn watcher(
        &self,
        failures: Arc<dyn JobFailures>,
        running: Arc<dyn RunningJobs>,
    ) -> JobWatcher {
        JobWatcher {
            runners: self.runners.clone(),
            reconcile_every: self.config.reconcile_every,
            failures,
            running,
        }
    }

    /// With the client of the environment: in-cluster service account, else `~/.kube/config`.
    pub async fn connect(config: KubernetesConfig) -> Result<Self, ExecutorError> {
        let client = Client::try_default()
            .await
            .map_err(|e| ExecutorError(format!("could not make a Kubernetes client: {e}")))?;
        Ok(Self::new(client, config))
    }

    /// Makes the Job's ConfigMap or Secret unless it exists already (a redelivered job: the
    /// same files, the same key, since a job's key is derived from its ids).
    async fn create<K>(&self, object: &K) -> Result<(), kube::Error>
    where
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>
            + Clone
            + serde::Serialize
            + serde::de::DeserializeOwned
            + std::fmt::Debug,
        K::DynamicType: Default,
    {
        let api: Api<K> = Api::namespaced(self.client.clone(), &self.config.namespace);
        match api.create(&PostParams::default(), object).await {
            Ok(_) => Ok(()),
            Err(e) if already_exists(&e) => Ok(()),
            Err(e) => Err(e),
        }
    }
}

fn already_exists(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(status) if status.is_already_exists() || status.code == 409)
}

#[async_trait::async_trait]
impl Executor for KubernetesExecutor {
    /// Creates the Job, then the Secret of its keys and its ConfigMap, each with an
    /// ownerReference to the Job: the pod waits for its ConfigMap volume, and all go away
    /// together. A Job that exists already (the job message was redelivered) is the runner
    /// started; its Secret and ConfigMap are made if the first delivery stopped before.
    #[tracing::instrument(skip_all, fields(vm_id = %launch.vm_id, job_id = %launch.job_id), err)]
    async fn start(&self, launch: Launch) -> Result<String, ExecutorError> {
        let job = manifest::job(&launch, &self.config)?;
        let files = manifest::read_workdir(&launch.workdir).await?;
        let name = manifest::name(&launch);
        let qualified = format!("kubernetes:{}/{name}", self.config.namespace);
        let api_error = |what: &str, e: kube::Error| {
            ExecutorError(format!("could not create {what} {qualified}: {e}"))
        };
        let jobs: Api<Job> = Api::namespaced(self.client.clone(), &self.config.namespace);
        let (created, uid) = match jobs.create(&PostParams::default(), &job).await {
            Ok(job) => (true, job.metadata.uid),
            Err(e) if already_exists(&e) => {
                tracing::info!(job = %name, "the Job exists already (a redelivered job)");
                let existing = jobs.get(&name).await.map_err(|e| api_error("Job", e))?;
                (false, existing.metadata.uid)
            }
            // The API server may have created the Job and failed to answer (a timeout):
            // read it back before reporting the job failed while its pod runs.
            Err(e) => match jobs.get_opt(&name).await {
                Ok(Some(existing)) => {
                    tracing::warn!(job = %name, error = %e, "the Job was created despite the error");
                    (true, existing.metadata.uid)
                }
                _ => return Err(api_error("Job", e)),
            },
        };
        let uid = uid.ok_or_else(|| ExecutorError(format!("Job {qualified} has no uid")))?;
        // The Secret first: the pod's container is made only once the ConfigMap volume
        // exists, and by then the Secret of its keys does too.
        let secret = job_secret::secret(&launch, &self.config, &uid);
        let config_map = manifest::config_map(&launch, &self.config, files, &uid);
        let made = match self.create(&secret).await {
            Ok(()) => self
                .create(&config_map)
                .await
                .map_err(|e| api_error("ConfigMap", e)),
            Err(e) => Err(api_error("Secret", e)),
        };
        if let Err(e) = made {
            if created {
                // Without them the pod would wait until the deadline: take the Job back, so
                // that the job is reported failed and nothing is left running.
                if let Err(e) = jobs.delete(&name, &DeleteParams::background()).await {
                    tracing::error!(job = %name, error = %e, "could not delete the Job");
                }
            }
            return Err(e);
        }
        tracing::info!(job = %name, action = launch.action.as_str(), "runner Job created");
        Ok(qualified)
    }

    /// Deletes the Job's pods with the pod's grace period: the runner gets SIGTERM, passes
    /// one interrupt on to Terraform, and reports what it prints before the SIGKILL. The Job
    /// stays, so that the watcher does not take it for deleted; with `backoffLimit: 0` no
    /// pod replaces the deleted one. A Job or pod already gone is no error.
    #[tracing::instrument(skip_all, fields(%runner), err)]
    async fn interrupt(&self, runner: &str) -> Result<(), ExecutorError> {
        let name = self.runners.job_name(runner)?;
        let grace = manifest::TERMINATION_GRACE_PERIOD_SECS as u32;
        self.runners.delete_pods(name, grace).await?;
        tracing::info!(job = %name, "runner pods deleted with a grace period");
        Ok(())
    }

    /// Whether the runner's Job exists (finished or not: a finished Job's runner may still
    /// have a result on its way).
    async fn is_running(&self, runner: &str) -> Result<bool, ExecutorError> {
        let name = self.runners.job_name(runner)?;
        let jobs: Api<Job> = Api::namespaced(self.client.clone(), &self.config.namespace);
        jobs.get_opt(name)
            .await
            .map(|job| job.is_some())
            .map_err(|e| ExecutorError(format!("could not read Job {runner}: {e}")))
    }

    /// Deletes the Job with background propagation, then its pods at once (grace period 0):
    /// Terraform is killed, as a local runner's is, and Postgres drops its state lock with
    /// its session. A Job already gone is no error.
    #[tracing::instrument(skip_all, fields(%runner), err)]
    async fn stop(&self, runner: &str) -> Result<(), ExecutorError> {
        let name = self.runners.job_name(runner)?;
        self.runners.delete_job(name, 0).await?;
        tracing::info!(job = %name, "runner Job deleted");
        Ok(())
    }
}
