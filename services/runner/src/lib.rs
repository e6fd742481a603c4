//! The runner: one process per Terraform job (a child process of the dispatcher locally,
//! the container of a Kubernetes Job in production). It runs `terraform init`, then
//! `apply`, `destroy` or a refresh (`plan -refresh-only` and `apply` of that plan, see
//! [`refresh`]) with `-json`, publishes every line as it comes, and ends with a result
//! carrying the exit code, `terraform output -json` and, for a refresh, the drift found.
//! The exit code decides success, never the text of a line. An install job runs no
//! Terraform: it runs taskservs on the VM over SSH ([`install`]).

mod active;
mod config;
mod drift;
pub mod env;
mod heartbeat;
pub mod install;
mod lines;
mod publish;
mod redact;
mod refresh;
mod signals;
mod terraform;

pub use config::{ConfigError, RunnerConfig, DEFAULT_PUBLISH_RETRY};
pub use lines::parse_line;
pub use redact::{Redactor, REDACTED};

use std::path::Path;

use bus::{Bus, RunnerMessage, RunnerReport};
use domain::provisioning::{Diagnostic, JobAction, Severity};

#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    #[error("could not connect to NATS: {0}")]
    Connect(#[from] bus::async_nats::ConnectError),
    #[error("could not publish to JetStream: {0}")]
    Publish(#[from] bus::async_nats::jetstream::context::PublishError),
    #[error("could not encode a report: {0}")]
    Encode(#[from] serde_json::Error),
    #[error("could not handle signals: {0}")]
    Signals(std::io::Error),
}

/// How a run ended, when it did not fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ran {
    /// Terraform ran (or the job failed before it could) and the result was delivered.
    Reported { terraform_exit_code: i32 },
    /// The daemon said the job is no longer active: nothing ran, nothing was reported.
    Skipped,
}

/// Runs the job and reports it. An error means the report could not be delivered. The
/// binary exits 0 once the result is delivered (or the job was skipped), whatever
/// Terraform's exit code: a non-zero exit tells the executor the job went unreported.
pub async fn run(config: RunnerConfig) -> Result<Ran, RunnerError> {
    // First of all: a signal from now on stops Terraform cleanly instead of the runner.
    let interrupts = signals::Interrupts::install().map_err(RunnerError::Signals)?;
    let bus = Bus::connect_runner(&config.nats_url, &config.prefix, &config.nats_auth).await?;
    // A runner with a NATS user of its own may subscribe to its inbox alone (nats/auth.conf):
    // it hears a cancel with its next heartbeat's question instead.
    let _following = match config.nats_auth {
        bus::NatsAuth::Url => active::follow_cancels(&bus, &config, interrupts.clone()).await,
        _ => None,
    };
    match active::job_status(&bus, &config).await {
        // Failed (by the watchdog), cancelled or ended meanwhile: nothing to run, nothing
        // to report.
        Some(status) if !status.active => return Ok(Ran::Skipped),
        // Cancelled once claimed: Terraform is not started, the job ends cancelled.
        Some(status) if status.cancel => interrupts.cancel("the job was cancelled before it ran"),
        _ => {}
    }
    let _beating = heartbeat::start(&bus, &config, interrupts.clone());
    let mut out = Reporter {
        publisher: publish::RetryingPublisher::new(
            bus.jetstream.clone(),
            config.signing_key.clone(),
            64,
            config.publish_retry,
        ),
        interrupts,
        bus,
        config: &config,
        line: 0,
        redactor: Redactor::new(config.secret_values.iter().cloned()),
    };
    out.send(RunnerReport::Started {
        runner: config.runner_name.clone(),
    })
    .await?;

    let mut diagnostics = vec![];
    let mut exit_code = match &config.source_dir {
        Some(source) => match copy_source(source, &config.workdir) {
            Ok(()) => 0,
            Err(e) => {
                diagnostics.push(Diagnostic {
                    severity: Severity::Error,
                    summary: format!(
                        "could not copy {} into {}",
                        source.display(),
                        config.workdir.display()
                    ),
                    detail: e.to_string(),
                });
                1
            }
        },
        None => 0,
    };
    let terraform_runs = config.action != JobAction::Install;
    if exit_code == 0 && !terraform_runs {
        exit_code = install::run(&config, &mut out, &mut diagnostics).await?;
    }
    if exit_code == 0 && terraform_runs {
        exit_code = terraform::init(&config, &mut out, &mut diagnostics).await?;
    }
    let mut drift = vec![];
    if exit_code == 0 && terraform_runs {
        (exit_code, drift) = match config.action {
            JobAction::Refresh => refresh::run(&config, &mut out, &mut diagnostics).await?,
            _ => (
                terraform::run_action(&config, &mut out, &mut diagnostics).await?,
                vec![],
            ),
        };
    }
    if exit_code != 0 {
        drift.clear(); // a refresh that did not finish recorded nothing
    }
    let outputs = match (exit_code, config.action) {
        (0, JobAction::Create | JobAction::Refresh) => terraform::outputs(&config).await,
        _ => Default::default(),
    };
    let outputs = outputs
        .into_iter()
        .map(|(name, value)| match value {
            serde_json::Value::String(s) => {
                (name, serde_json::Value::String(out.redactor.apply(&s)))
            }
            other => (name, other),
        })
        .collect();
    let errors = diagnostics
        .into_iter()
        .filter(|d| d.severity == Severity::Error)
        .map(|d| Diagnostic {
            severity: d.severity,
            summary: lines::clean(&out.redactor.apply(&d.summary)),
            detail: lines::clean(&out.redactor.apply(&d.detail)),
        })
        .collect();
    out.send(RunnerReport::Result {
        exit_code,
        outputs,
        diagnostics: errors,
        lines: out.line,
        drift,
    })
    .await?;
    out.publisher.flush().await?;
    Ok(Ran::Reported {
        terraform_exit_code: exit_code,
    })
}

/// Copies the files of `source` (flat: a ConfigMap mount) into `workdir`, creating it.
/// A ConfigMap volume holds each key as a symbolic link into a hidden `..data` folder:
/// links are followed, and entries whose names start with `..` are skipped.
pub fn copy_source(source: &Path, workdir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(workdir)?;
    for entry in std::fs::read_dir(source)? {
        let entry = entry?;
        if entry.file_name().to_string_lossy().starts_with("..") {
            continue;
        }
        let path = entry.path();
        if std::fs::metadata(&path)?.is_file() {
            std::fs::copy(&path, workdir.join(entry.file_name()))?;
        }
    }
    Ok(())
}

/// Publishes the reports of one job, numbering its lines.
pub(crate) struct Reporter<'a> {
    bus: Bus,
    publisher: publish::RetryingPublisher,
    pub(crate) interrupts: signals::Interrupts,
    config: &'a RunnerConfig,
    line: u32,
    pub(crate) redactor: Redactor,
}

impl Reporter<'_> {
    pub(crate) async fn log(
        &mut self,
        level: String,
        kind: String,
        message: String,
    ) -> Result<(), RunnerError> {
        self.line += 1;
        let line = self.line;
        let message = lines::truncate(&lines::clean(&self.redactor.apply(&message)));
        self.send(RunnerReport::Log {
            line,
            level: lines::clean(&level),
            kind: lines::clean(&kind),
            message,
        })
        .await
    }

    async fn send(&mut self, report: RunnerReport) -> Result<(), RunnerError> {
        let message = RunnerMessage {
            vm_id: self.config.vm_id,
            job_id: self.config.job_id,
            report,
        };
        let subject =
            self.bus
                .subjects
                .runner(message.vm_id, message.job_id, message.report.subject_kind());
        let payload = serde_json::to_vec(&message)?;
        self.publisher
            .publish(subject, message.message_id(), payload.into())
            .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_source_copies_the_files_of_a_configmap_mount_into_the_workdir() {
        let root = std::env::temp_dir().join(format!("runner-copy-source-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        // The layout the kubelet makes: `..data/<key>` and `<key> -> ..data/<key>`.
        let source = root.join("job");
        std::fs::create_dir_all(source.join("..data")).unwrap();
        std::fs::write(source.join("..data/main.tf"), "resource {}\n").unwrap();
        std::fs::write(source.join("..data/terraform.tfvars.json"), "{}").unwrap();
        std::fs::write(source.join("backend.tf"), "terraform {}\n").unwrap();
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink("..data/main.tf", source.join("main.tf")).unwrap();
            std::os::unix::fs::symlink(
                "..data/terraform.tfvars.json",
                source.join("terraform.tfvars.json"),
            )
            .unwrap();
        }
        let workdir = root.join("work");

        copy_source(&source, &workdir).unwrap();

        let mut names: Vec<String> = std::fs::read_dir(&workdir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        #[cfg(unix)]
        assert_eq!(names, ["backend.tf", "main.tf", "terraform.tfvars.json"]);
        assert_eq!(
            std::fs::read_to_string(workdir.join("backend.tf")).unwrap(),
            "terraform {}\n"
        );
        #[cfg(unix)]
        {
            assert_eq!(
                std::fs::read_to_string(workdir.join("main.tf")).unwrap(),
                "resource {}\n"
            );
            // A copy, not a link: Terraform may write next to it.
            assert!(!std::fs::symlink_metadata(workdir.join("main.tf"))
                .unwrap()
                .file_type()
                .is_symlink());
        }
        std::fs::remove_dir_all(&root).unwrap();
    }
}
