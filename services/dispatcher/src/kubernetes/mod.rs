//! Runs each job's runner as a batch/v1 Job. The working directory travels in a ConfigMap
//! owned by the Job; credentials are references to Secrets, never values. A Job that fails
//! before its runner reports is not noticed yet: that needs a watcher on the Jobs.

#[cfg(test)]
mod deploy_files;
pub(crate) mod manifest;
#[cfg(test)]
mod tests;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{DeleteParams, PostParams};
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
    /// `activeDeadlineSeconds`: when a Job still running is stopped.
    pub job_deadline_secs: i64,
    pub resources: RunnerResources,
    /// The Secret holding the Terraform backend password (`RUNNER_BACKEND_PASSWORD`).
    pub backend_secret: Option<registry::SecretRef>,
}

impl KubernetesConfig {
    pub const DEFAULT_NAMESPACE: &'static str = "default";
    pub const DEFAULT_JOB_TTL_SECS: i32 = 3600;
    pub const DEFAULT_JOB_DEADLINE_SECS: i64 = 7200;

    /// The defaults, for the given runner image.
    pub fn new(runner_image: impl Into<String>) -> Self {
        Self {
            namespace: Self::DEFAULT_NAMESPACE.into(),
            runner_image: runner_image.into(),
            job_ttl_secs: Self::DEFAULT_JOB_TTL_SECS,
            job_deadline_secs: Self::DEFAULT_JOB_DEADLINE_SECS,
            resources: RunnerResources::default(),
            backend_secret: None,
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
}

impl KubernetesExecutor {
    pub fn new(client: Client, config: KubernetesConfig) -> Self {
        Self { client, config }
    }

    /// With the client of the environment: in-cluster service account, else `~/.kube/config`.
    pub async fn connect(config: KubernetesConfig) -> Result<Self, ExecutorError> {
        let client = Client::try_default()
            .await
            .map_err(|e| ExecutorError(format!("could not make a Kubernetes client: {e}")))?;
        Ok(Self::new(client, config))
    }

    /// Makes the ConfigMap unless it exists already (a redelivered job).
    async fn create_config_map(&self, config_map: &ConfigMap) -> Result<(), kube::Error> {
        let config_maps: Api<ConfigMap> =
            Api::namespaced(self.client.clone(), &self.config.namespace);
        match config_maps.create(&PostParams::default(), config_map).await {
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
    /// Creates the Job, then its ConfigMap with an ownerReference to the Job: the pod waits
    /// for its ConfigMap volume, and both go away together. A Job that exists already (the
    /// job message was redelivered) is the runner started; its ConfigMap is made if the first
    /// delivery stopped between the two.
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
        let config_map = manifest::config_map(&launch, &self.config, files, &uid);
        if let Err(e) = self.create_config_map(&config_map).await {
            if created {
                // Without its ConfigMap the pod would wait until the deadline: take the Job
                // back, so that the job is reported failed and nothing is left running.
                if let Err(e) = jobs.delete(&name, &DeleteParams::background()).await {
                    tracing::error!(job = %name, error = %e, "could not delete the Job");
                }
            }
            return Err(api_error("ConfigMap", e));
        }
        tracing::info!(job = %name, action = launch.action.as_str(), "runner Job created");
        Ok(qualified)
    }

    /// Not built yet: a cancel reaches a Kubernetes runner through NATS only.
    async fn interrupt(&self, runner: &str) -> Result<(), ExecutorError> {
        Err(ExecutorError(format!(
            "{runner}: interrupting a Job is not supported yet"
        )))
    }

    /// Deletes the Job with background propagation: its pod (and the ConfigMap it owns) go
    /// too. A Job already gone is no error.
    async fn stop(&self, runner: &str) -> Result<(), ExecutorError> {
        let prefix = format!("kubernetes:{}/", self.config.namespace);
        let name = runner
            .strip_prefix(&prefix)
            .ok_or_else(|| ExecutorError(format!("{runner:?} is not a Job of this executor")))?;
        let jobs: Api<Job> = Api::namespaced(self.client.clone(), &self.config.namespace);
        match jobs.delete(name, &DeleteParams::background()).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            Err(e) => return Err(ExecutorError(format!("could not delete Job {runner}: {e}"))),
        }
        tracing::info!(job = %name, "runner Job deleted");
        Ok(())
    }
}
