//! An install job: no Terraform. Each taskserv of the job's plan, in order, runs on the VM
//! over SSH (its install script, then its health check, then its outputs are read), and
//! each step's progress is reported (`started`, then `installed` or `failed`). `on_error`
//! decides what a failure does to the rest: `continue` goes on, `retry` runs the step
//! again up to `max_retries` times, `stop` ends the job. A cancel or signal stops it
//! between steps, and interrupts the running ssh within one.

pub mod plan;
mod ssh;

use std::collections::BTreeMap;

use bus::RunnerReport;
use domain::provisioning::{Diagnostic, Severity, TaskservReport};
use domain::taskservs::OnError;
use secrecy::ExposeSecret;

use crate::{Reporter, RunnerConfig, RunnerError};
use plan::{InstallPlan, InstallStep};
use ssh::{LastLines, Ssh, HOST_KEY_FAILED};

/// Where a taskserv's scripts and outputs live on the VM.
const BASE_DIR: &str = "/var/lib/provisioning/taskservs";

/// How long a step with `on_error = retry` waits before it runs again (as `run.sh` does).
const RETRY_AFTER: std::time::Duration = std::time::Duration::from_secs(10);

/// How one step ended.
enum StepOutcome {
    Installed(BTreeMap<String, String>),
    Failed {
        exit_code: i32,
        last_lines: Vec<String>,
        reason: String,
    },
}

/// Runs the job's steps; the job's exit code: 0 when every step installed or failed with
/// `on_error = continue`.
pub(crate) async fn run(
    config: &RunnerConfig,
    out: &mut Reporter<'_>,
    diagnostics: &mut Vec<Diagnostic>,
) -> Result<i32, RunnerError> {
    let mut error = |summary: String, detail: String| {
        diagnostics.push(Diagnostic {
            severity: Severity::Error,
            summary,
            detail,
        })
    };
    let plan = match read_plan(config) {
        Ok(plan) => plan,
        Err(e) => {
            error("could not read the install plan".into(), e);
            return Ok(1);
        }
    };
    let Some(pem) = &config.deploy_key else {
        error(
            format!("no deploy key was given ({})", crate::env::DEPLOY_KEY),
            String::new(),
        );
        return Ok(1);
    };
    let keys = match KeyDir::new(config, pem.expose_secret()) {
        Ok(keys) => keys,
        Err(e) => {
            error("could not write the deploy key".into(), e.to_string());
            return Ok(1);
        }
    };
    let ssh = Ssh {
        target: plan.target.clone(),
        key_file: keys.key_file.clone(),
        known_hosts: config.workdir.join(plan::KNOWN_HOSTS_FILE),
    };
    for (index, step) in plan.steps.iter().enumerate() {
        if out.interrupts.stopping() {
            let message = format!(
                "stopped (by a signal or a cancel) before taskserv {}",
                step.name
            );
            out.log("error".into(), "runner".into(), message.clone())
                .await?;
            error(message, String::new());
            return Ok(130);
        }
        let number = u8::try_from(index).unwrap_or(u8::MAX);
        out.send(RunnerReport::Taskserv {
            step: number,
            report: TaskservReport::Started,
        })
        .await?;
        let mut tries = 0;
        let outcome = loop {
            let outcome = run_step(config, &ssh, index, step, out).await?;
            let again = matches!(outcome, StepOutcome::Failed { .. })
                && step.on_error == OnError::Retry
                && tries < step.max_retries
                && !out.interrupts.stopping();
            if !again {
                break outcome;
            }
            tries += 1;
            let message = format!(
                "taskserv {} failed; trying again in 10 s ({tries} of {})",
                step.name, step.max_retries
            );
            out.log("warn".into(), "runner".into(), message).await?;
            tokio::time::sleep(RETRY_AFTER).await;
        };
        match outcome {
            StepOutcome::Installed(outputs) => {
                out.send(RunnerReport::Taskserv {
                    step: number,
                    report: TaskservReport::Installed { outputs },
                })
                .await?;
            }
            StepOutcome::Failed {
                exit_code,
                last_lines,
                reason,
            } => {
                out.send(RunnerReport::Taskserv {
                    step: number,
                    report: TaskservReport::Failed {
                        exit_code: Some(exit_code),
                        last_lines: last_lines.clone(),
                    },
                })
                .await?;
                let summary = format!("taskserv {} failed: {reason}", step.name);
                if step.on_error == OnError::Continue && !out.interrupts.stopping() {
                    out.log(
                        "warn".into(),
                        "runner".into(),
                        format!("{summary}; going on"),
                    )
                    .await?;
                    continue;
                }
                out.log("error".into(), "runner".into(), summary.clone())
                    .await?;
                error(summary, last_lines.join("\n"));
                return Ok(if exit_code == 0 { 1 } else { exit_code });
            }
        }
    }
    Ok(0)
}

/// Installs step `index` once: install script, health check, outputs.
async fn run_step(
    config: &RunnerConfig,
    ssh: &Ssh,
    index: usize,
    step: &InstallStep,
    out: &mut Reporter<'_>,
) -> Result<StepOutcome, RunnerError> {
    let read = |file: String| std::fs::read_to_string(config.workdir.join(&file));
    let (install, health) = match (
        read(plan::install_file(index)),
        read(plan::health_file(index)),
    ) {
        (Ok(install), Ok(health)) => (install, health),
        (Err(e), _) | (_, Err(e)) => {
            return Ok(StepOutcome::Failed {
                exit_code: 1,
                last_lines: vec![],
                reason: format!("its scripts are missing from the install directory: {e}"),
            })
        }
    };
    let dir = format!("{BASE_DIR}/{}", step.name);
    let mut last = LastLines::default();
    let install_command = format!(
        "umask 077 && mkdir -p {dir} && cat > {dir}/install.sh && : > {dir}/outputs && \
         TASKSERV_OUTPUTS={dir}/outputs bash {dir}/install.sh </dev/null"
    );
    let name = step.name.as_str();
    let code = ssh
        .stream(&install_command, &install, name, out, &mut last)
        .await?;
    if code != 0 {
        return Ok(failed(code, last, "its install script"));
    }
    let secs = step.health_timeout_secs.max(1);
    let health_command = format!(
        "umask 077 && cat > {dir}/health.sh && timeout {secs} sh -c \
         'until bash {dir}/health.sh </dev/null; do sleep 2; done'"
    );
    let code = ssh
        .stream(&health_command, &health, name, out, &mut last)
        .await?;
    if code != 0 {
        return Ok(failed(code, last, "its health check"));
    }
    let Some(text) = ssh.capture(&format!("cat {dir}/outputs")).await else {
        return Ok(failed(1, last, "its outputs could not be read"));
    };
    let outputs = text
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_owned(), out.redactor.apply(v.trim())))
        .filter(|(k, _)| !k.is_empty())
        .collect();
    Ok(StepOutcome::Installed(outputs))
}

fn failed(code: i32, last: LastLines, what: &str) -> StepOutcome {
    let reason = if code == 255 && last.contains(HOST_KEY_FAILED) {
        "the VM's SSH host key is not the one it posted when it phoned home \
         (Host key verification failed): nothing was run"
            .to_owned()
    } else if code == 255 {
        "ssh could not reach the VM or log in (exit code 255)".to_owned()
    } else if code == 124 && what == "its health check" {
        "its health check did not pass in time".to_owned()
    } else {
        format!("{what} exited with {code}")
    };
    StepOutcome::Failed {
        exit_code: code,
        last_lines: last.to_vec(),
        reason,
    }
}

fn read_plan(config: &RunnerConfig) -> Result<InstallPlan, String> {
    let path = config.workdir.join(plan::PLAN_FILE);
    let text = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_slice(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// A folder of the runner's own, readable by it alone, holding the deploy key while the
/// job runs; removed when dropped.
struct KeyDir {
    dir: std::path::PathBuf,
    key_file: std::path::PathBuf,
}

impl KeyDir {
    fn new(config: &RunnerConfig, pem: &str) -> std::io::Result<Self> {
        use std::os::unix::fs::DirBuilderExt;
        let dir = std::env::temp_dir().join(format!(
            "provisioning-runner-{}-{}-{}",
            config.vm_id,
            config.job_id,
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
        let key_file = ssh::write_key(&dir, pem)?;
        Ok(Self { dir, key_file })
    }
}

impl Drop for KeyDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
