//! The runner: one process per Terraform job (a child process of the dispatcher locally,
//! the container of a Kubernetes Job in production). It runs `terraform init`, then
//! `apply -auto-approve -json` or `destroy -auto-approve -json`, publishes every line as it
//! comes, and ends with a result carrying the exit code and `terraform output -json`.
//! The exit code decides success, never the text of a line.

mod config;
mod lines;
mod terraform;

pub use config::{ConfigError, RunnerConfig};
pub use lines::parse_line;

use bus::{Bus, Publisher, RunnerMessage, RunnerReport};
use domain::provisioning::JobAction;

#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    #[error("could not connect to NATS: {0}")]
    Connect(#[from] bus::async_nats::ConnectError),
    #[error("could not publish to JetStream: {0}")]
    Publish(#[from] bus::async_nats::jetstream::context::PublishError),
}

/// Runs the job and reports it. Returns Terraform's exit code; an error means the
/// report could not be delivered.
pub async fn run(config: RunnerConfig) -> Result<i32, RunnerError> {
    let bus = Bus::connect(&config.nats_url, &config.prefix).await?;
    let mut out = Reporter {
        publisher: Publisher::new(bus.jetstream.clone(), 64),
        bus,
        config: &config,
        line: 0,
    };
    out.send(RunnerReport::Started {
        runner: config.runner_name.clone(),
    })
    .await?;

    let mut diagnostics = vec![];
    let mut exit_code = terraform::init(&config, &mut out, &mut diagnostics).await?;
    if exit_code == 0 {
        exit_code = terraform::run_action(&config, &mut out, &mut diagnostics).await?;
    }
    let outputs = match (exit_code, config.action) {
        (0, JobAction::Apply) => terraform::outputs(&config).await,
        _ => Default::default(),
    };
    let errors = diagnostics
        .into_iter()
        .filter(|d| d.severity == "error")
        .collect();
    out.send(RunnerReport::Result {
        exit_code,
        outputs,
        diagnostics: errors,
    })
    .await?;
    out.publisher.flush().await?;
    Ok(exit_code)
}

/// Publishes the reports of one job, numbering its lines.
pub(crate) struct Reporter<'a> {
    bus: Bus,
    publisher: Publisher,
    config: &'a RunnerConfig,
    line: u32,
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
        self.send(RunnerReport::Log {
            line,
            level,
            kind,
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
        let payload = serde_json::to_vec(&message).unwrap_or_default();
        self.publisher
            .publish(subject, &message.message_id(), payload.into())
            .await?;
        Ok(())
    }
}
