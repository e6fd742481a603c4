//! Where runners run. `local` starts a child process; a Kubernetes executor creates a Job.

use std::path::PathBuf;
use std::process::Stdio;

use domain::provisioning::{JobAction, JobId, VmId};
use secrecy::{ExposeSecret, SecretString};

/// Everything an executor needs to start the runner of one job.
pub struct Launch {
    pub vm_id: VmId,
    pub job_id: JobId,
    pub action: JobAction,
    pub env: Vec<(String, String)>,
    /// Environment that must not be logged or shown (locally: variables of the child
    /// process; on Kubernetes: Secret references).
    pub secret_env: Vec<(String, SecretString)>,
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ExecutorError(pub String);

#[async_trait::async_trait]
pub trait Executor: Send + Sync {
    /// Starts the runner and returns a name for it once it is running.
    async fn start(&self, launch: Launch) -> Result<String, ExecutorError>;
}

/// Runs the runner binary as a child process of the daemon.
pub struct LocalExecutor {
    pub runner_bin: PathBuf,
}

#[async_trait::async_trait]
impl Executor for LocalExecutor {
    #[tracing::instrument(skip_all, fields(vm_id = %launch.vm_id, job_id = %launch.job_id), err)]
    async fn start(&self, launch: Launch) -> Result<String, ExecutorError> {
        let mut cmd = tokio::process::Command::new(&self.runner_bin);
        cmd.envs(launch.env)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit());
        for (name, value) in &launch.secret_env {
            cmd.env(name, value.expose_secret());
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| ExecutorError(format!("{}: {e}", self.runner_bin.display())))?;
        let pid = child.id().unwrap_or_default();
        let name = format!("local:{pid}");
        tracing::info!(pid, action = launch.action.as_str(), "runner started");
        // Reap the child, so it leaves no zombie; its reports go over NATS.
        tokio::spawn(async move {
            match child.wait().await {
                Ok(status) if status.success() => tracing::debug!(pid, "runner ended"),
                Ok(status) => tracing::warn!(pid, %status, "runner ended with an error"),
                Err(e) => tracing::warn!(pid, error = %e, "could not wait for the runner"),
            }
        });
        Ok(name)
    }
}
