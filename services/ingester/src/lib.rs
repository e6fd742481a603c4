//! The ingester: a durable JetStream consumer of runner messages. It takes what has
//! arrived (up to a batch), turns each job's messages into commands in order (`StartJob`,
//! one `RecordLogs` per run of consecutive lines, so one transaction per batch rather than
//! per line, then `FinishJob`), and acks messages only after their command committed.

use std::sync::Arc;
use std::time::Duration;

use bus::async_nats::jetstream::{AckKind, Message};
use bus::{Bus, RunnerMessage, RunnerReport};
use domain::provisioning::{JobId, JobOutcome, LogLineIn, ProvisioningCommand, VmId};
use futures::StreamExt;
use store::{CommandError, Metadata, ProvisioningCqrs};
use tokio_util::sync::CancellationToken;

const BATCH: usize = 500;

/// The reports of one job in a batch, with the messages that carried them.
type Reports = Vec<(Message, RunnerReport)>;

pub struct Ingester {
    pub bus: Bus,
    pub cqrs: Arc<ProvisioningCqrs>,
}

impl Ingester {
    pub async fn run(self, cancel: CancellationToken) {
        while !cancel.is_cancelled() {
            if let Err(e) = self.consume(&cancel).await {
                tracing::error!(error = %e, "ingester consumer failed; reconnecting");
                tokio::select! {
                    _ = cancel.cancelled() => return,
                    _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                }
            }
        }
    }

    async fn consume(&self, cancel: &CancellationToken) -> Result<(), bus::async_nats::Error> {
        let consumer = bus::consumer(&self.bus, "RUNNER", "ingester").await?;
        let mut batches = consumer.messages().await?.ready_chunks(BATCH);
        loop {
            let batch = tokio::select! {
                _ = cancel.cancelled() => return Ok(()),
                b = batches.next() => b,
            };
            let Some(batch) = batch else { return Ok(()) };
            // A failed pull (a missed heartbeat) must not drop the messages that did arrive.
            let messages = batch
                .into_iter()
                .filter_map(|m| {
                    m.map_err(|e| tracing::warn!(error = %e, "pull error; going on"))
                        .ok()
                })
                .collect();
            self.ingest(messages).await;
        }
    }

    /// Applies a batch of runner messages, job by job, each job's messages in order.
    #[tracing::instrument(skip_all, fields(messages = messages.len()))]
    pub async fn ingest(&self, messages: Vec<Message>) {
        let mut jobs: Vec<((VmId, JobId), Reports)> = vec![];
        for message in messages {
            let parsed: RunnerMessage = match serde_json::from_slice(&message.payload) {
                Ok(parsed) => parsed,
                Err(e) => {
                    tracing::error!(error = %e, subject = %message.subject, "dropping a runner message that does not parse");
                    let _ = message.ack().await;
                    continue;
                }
            };
            let key = (parsed.vm_id, parsed.job_id);
            match jobs.iter_mut().find(|(k, _)| *k == key) {
                Some((_, list)) => list.push((message, parsed.report)),
                None => jobs.push((key, vec![(message, parsed.report)])),
            }
        }
        for ((vm, job), reports) in jobs {
            self.ingest_job(vm, job, reports).await;
        }
    }

    async fn ingest_job(&self, vm: VmId, job: JobId, reports: Reports) {
        let metadata = Metadata {
            actor: "runner".to_owned(),
            correlation_id: format!("{vm}/job/{job}"),
        };
        let mut pending = reports.into_iter().peekable();
        while let Some((message, report)) = pending.next() {
            let mut acks = vec![message];
            let command = match report {
                RunnerReport::Started { runner } => ProvisioningCommand::StartJob {
                    job_id: job,
                    runner,
                },
                RunnerReport::Result {
                    exit_code,
                    outputs,
                    diagnostics,
                    lines,
                } => ProvisioningCommand::FinishJob {
                    job_id: job,
                    outcome: JobOutcome {
                        exit_code,
                        outputs,
                        diagnostics,
                        lines,
                    },
                },
                RunnerReport::Log {
                    line,
                    level,
                    kind,
                    message,
                } => {
                    let mut lines = vec![LogLineIn {
                        line,
                        level,
                        kind,
                        message,
                    }];
                    while let Some((_, RunnerReport::Log { .. })) = pending.peek() {
                        let Some((
                            m,
                            RunnerReport::Log {
                                line,
                                level,
                                kind,
                                message,
                            },
                        )) = pending.next()
                        else {
                            break;
                        };
                        lines.push(LogLineIn {
                            line,
                            level,
                            kind,
                            message,
                        });
                        acks.push(m);
                    }
                    ProvisioningCommand::RecordLogs { job_id: job, lines }
                }
            };
            match store::execute(&self.cqrs, vm, command, metadata.clone()).await {
                Ok(()) => {}
                Err(CommandError::Rejected(e)) if e.is_retryable() => {
                    // Out of order (a line is still on its way): try these again shortly,
                    // with the rest of the job's messages, which must wait for them.
                    tracing::info!(%vm, %job, reason = %e, "runner messages out of order; retrying");
                    let rest = acks.into_iter().chain(pending.map(|(m, _)| m));
                    for m in rest {
                        let _ = m
                            .ack_with(AckKind::Nak(Some(Duration::from_millis(500))))
                            .await;
                    }
                    return;
                }
                Err(CommandError::Rejected(e)) => {
                    // A stale or repeated message: nothing to do but drop it.
                    tracing::warn!(%vm, %job, reason = %e, "runner message refused by the VM");
                }
                Err(e) => {
                    tracing::error!(%vm, %job, error = %e, "could not record runner messages; they will be redelivered");
                    let rest = acks.into_iter().chain(pending.map(|(m, _)| m));
                    for m in rest {
                        let _ = m.ack_with(AckKind::Nak(Some(Duration::from_secs(1)))).await;
                    }
                    return;
                }
            }
            for m in acks {
                if let Err(e) = m.ack().await {
                    tracing::warn!(error = %e, "could not ack a runner message");
                }
            }
        }
    }
}
