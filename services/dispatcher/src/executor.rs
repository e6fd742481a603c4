//! Where runners run. `local` starts a child process; a Kubernetes executor creates a Job.

use std::path::PathBuf;
use std::process::Stdio;

use std::sync::Arc;

use domain::provisioning::{JobAction, JobId, ProviderId, VmId};
use secrecy::{ExposeSecret, SecretString};

use crate::local_boot::BootSimulator;

/// Everything an executor needs to start the runner of one job.
pub struct Launch {
    pub vm_id: VmId,
    pub job_id: JobId,
    pub action: JobAction,
    /// The VM's provider.
    pub provider: ProviderId,
    /// The runner's environment, credentials excepted.
    pub env: Vec<(String, String)>,
    /// The runner's credentials, each with what each kind of executor needs of it.
    pub credentials: Vec<LaunchCredential>,
    /// The key of this job alone, which signs the runner's reports (`RUNNER_SIGNING_KEY`):
    /// the local executor passes it in the environment, the Kubernetes one in a Secret of
    /// the Job's own.
    pub signing_key: bus::JobKey,
    /// An install job's deploy key, the VM's SSH private key (`RUNNER_DEPLOY_KEY`); `None`
    /// for every other action. It travels as the signing key does: the local executor
    /// passes it in the environment, the Kubernetes one in the Job's own Secret, since a
    /// Secret named by the provider registry cannot hold a key derived per VM.
    pub deploy_key: Option<SecretString>,
    /// The working directory the dispatcher prepared.
    pub workdir: PathBuf,
    /// When the executor stops the runner whatever it does (Kubernetes:
    /// `activeDeadlineSeconds`): the action's deadline plus the cancel cool-off, so the
    /// daemon's clean cancel comes first.
    pub active_deadline: std::time::Duration,
}

/// A credential of a runner: never logged, never shown.
pub struct LaunchCredential {
    /// The runner's environment variable.
    pub name: String,
    /// Where the daemon takes the value from, for messages (`NREC_OS_PASSWORD`).
    pub source: Option<String>,
    /// The value, when the daemon holds it (what the local executor passes).
    pub value: Option<SecretString>,
    /// The Kubernetes Secret holding it (what a Kubernetes executor references).
    pub secret: Option<registry::SecretRef>,
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ExecutorError(pub String);

#[async_trait::async_trait]
pub trait Executor: Send + Sync {
    /// Starts the runner and returns a name for it once it is running.
    async fn start(&self, launch: Launch) -> Result<String, ExecutorError>;

    /// Asks the runner `start` named to stop cleanly: Terraform gets an interrupt, stops
    /// after its current operations, releases its state lock, and the runner reports the
    /// result (a cancel). A runner already gone is no error.
    async fn interrupt(&self, runner: &str) -> Result<(), ExecutorError>;

    /// Whether the runner `start` named may still run: its process is alive, or its Job
    /// exists. `false` only when it is gone for sure.
    async fn is_running(&self, runner: &str) -> Result<bool, ExecutorError>;

    /// Stops the runner `start` named at once (a force-cancel, or the watchdog gave its job
    /// up). A runner already gone is no error.
    async fn stop(&self, runner: &str) -> Result<(), ExecutorError>;
}

/// The daemon's environment variables a local runner inherits.
const INHERITED: &[&str] = &[
    "PATH",
    "HOME",
    "TMPDIR",
    "LANG",
    "TZ",
    "RUST_LOG",
    runner::env::LOG_FORMAT,
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "TF_CLI_CONFIG_FILE",
    "TF_PLUGIN_CACHE_DIR",
];

/// Runs the runner binary as a child process of the daemon. When a runner ends without
/// having delivered its result (it crashed, was killed, or could not reach NATS), the
/// executor reports the job as failed on its behalf, so the VM does not wait for ever.
pub struct LocalExecutor {
    pub runner_bin: PathBuf,
    pub bus: bus::Bus,
    /// To sign the failure it reports for a runner.
    pub keys: bus::RunnerKeys,
    /// Boots `local` VMs in simulation once their create applied; `None`: off.
    pub boot: Option<Arc<BootSimulator>>,
}

#[async_trait::async_trait]
impl Executor for LocalExecutor {
    #[tracing::instrument(skip_all, fields(vm_id = %launch.vm_id, job_id = %launch.job_id), err)]
    async fn start(&self, launch: Launch) -> Result<String, ExecutorError> {
        // Read now, while the working directory is the dispatcher's alone.
        let boot = self
            .boot
            .clone()
            .and_then(|sim| sim.plan(&launch).map(|plan| (sim, plan)));
        let mut cmd = tokio::process::Command::new(&self.runner_bin);
        // The runner (and Terraform) get only what they need: never the daemon's own
        // secrets (DATABASE_URL, the admin token) nor other providers' credentials.
        cmd.env_clear()
            .envs(std::env::vars().filter(|(name, _)| INHERITED.contains(&name.as_str())))
            .envs(launch.env)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            // A process group of its own: a Ctrl-C or SIGTERM to the daemon's group does not
            // reach the runner, which goes on reporting over JetStream while the daemon
            // restarts; and the watchdog can stop the runner and Terraform together. Not
            // killed when dropped (tokio's default, said here because it matters).
            .process_group(0)
            .kill_on_drop(false);
        for credential in &launch.credentials {
            let value = credential.value.as_ref().ok_or_else(|| {
                ExecutorError(format!(
                    "credential {} is not set",
                    credential.source.as_deref().unwrap_or(&credential.name)
                ))
            })?;
            cmd.env(&credential.name, value.expose_secret());
        }
        cmd.env(
            runner::env::SIGNING_KEY,
            launch.signing_key.to_secret().expose_secret(),
        );
        if let Some(key) = &launch.deploy_key {
            cmd.env(runner::env::DEPLOY_KEY, key.expose_secret());
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| ExecutorError(format!("{}: {e}", self.runner_bin.display())))?;
        let pid = child.id().unwrap_or_default();
        let name = format!("local:{pid}");
        tracing::info!(pid, action = launch.action.as_str(), "runner started");
        // Reap the child, so it leaves no zombie; its reports go over NATS.
        let (bus, keys) = (self.bus.clone(), self.keys.clone());
        let (vm_id, job_id) = (launch.vm_id, launch.job_id);
        tokio::spawn(async move {
            let reason = match child.wait().await {
                Ok(status) if status.success() => {
                    tracing::debug!(pid, "runner ended");
                    if let Some((sim, plan)) = boot {
                        sim.run(plan).await;
                    }
                    return;
                }
                Ok(status) => format!("the runner ended ({status}) before reporting a result"),
                Err(e) => format!("the runner was lost: {e}"),
            };
            tracing::warn!(pid, %reason, "reporting the job as failed");
            if let Err(e) = crate::report_failure(&bus, &keys, vm_id, job_id, reason).await {
                tracing::error!(pid, error = %e, "could not report the job as failed");
            }
        });
        Ok(name)
    }

    /// Sends SIGINT to the runner alone (not its group): the runner passes one interrupt on
    /// to Terraform, which runs in a group of its own, and reports what it prints.
    async fn interrupt(&self, runner: &str) -> Result<(), ExecutorError> {
        let pid = local_pid(runner)?;
        signal(&["-INT", "--", &pid.to_string()]).await?;
        tracing::info!(pid, "runner interrupted");
        Ok(())
    }

    /// Whether the runner's process exists (`kill -0`).
    async fn is_running(&self, runner: &str) -> Result<bool, ExecutorError> {
        let pid = local_pid(runner)?;
        signal(&["-0", &pid.to_string()]).await
    }

    /// Kills the runner's Terraform, in a process group of its own (`kill -KILL -<child>`
    /// for each child of the runner), then the runner's group (`kill -KILL -<pid>`). A
    /// process group id is a pid, which the system may give again once the group is gone: a
    /// stop runs only for a job just failed or forced off, whose runner was recorded, so the
    /// window is small.
    async fn stop(&self, runner: &str) -> Result<(), ExecutorError> {
        let pid = local_pid(runner)?;
        let children = tokio::process::Command::new("pgrep")
            .args(["-P", &pid.to_string()])
            .stderr(Stdio::null())
            .output()
            .await
            .map_err(|e| ExecutorError(format!("could not run pgrep: {e}")))?;
        for child in String::from_utf8_lossy(&children.stdout).split_whitespace() {
            signal(&["-KILL", "--", &format!("-{child}")]).await?;
        }
        // `kill` fails when no process is left in the group: stopped already.
        let killed = signal(&["-KILL", "--", &format!("-{pid}")]).await?;
        tracing::info!(pid, killed, "runner stopped");
        Ok(())
    }
}

fn local_pid(runner: &str) -> Result<u32, ExecutorError> {
    runner
        .strip_prefix("local:")
        .and_then(|pid| pid.parse::<u32>().ok())
        .filter(|&pid| pid > 1)
        .ok_or_else(|| ExecutorError(format!("{runner:?} is not a local runner")))
}

/// Runs `kill` with `args`; whether a process got the signal.
async fn signal(args: &[&str]) -> Result<bool, ExecutorError> {
    let status = tokio::process::Command::new("kill")
        .args(args)
        .stderr(Stdio::null())
        .status()
        .await
        .map_err(|e| ExecutorError(format!("could not run kill: {e}")))?;
    Ok(status.success())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_local_runner_may_run_while_its_process_lives() {
        let nats = std::env::var("NATS_URL").unwrap_or_else(|_| "nats://127.0.0.1:4222".into());
        let executor = LocalExecutor {
            runner_bin: "unused".into(),
            bus: bus::Bus::connect(&nats, "executor-test").await.unwrap(),
            keys: bus::RunnerKeys::new(vec![1; 32]).unwrap(),
            boot: None,
        };
        let mut child = tokio::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let runner = format!("local:{}", child.id().unwrap());
        assert!(executor.is_running(&runner).await.unwrap());
        child.kill().await.unwrap();
        child.wait().await.unwrap();
        assert!(!executor.is_running(&runner).await.unwrap());
        assert!(executor.is_running("kubernetes:ns/job").await.is_err());
    }
}
