//! The ingester: a durable JetStream consumer of runner messages. It takes what has
//! arrived (up to a batch), turns each job's messages into commands in order (`StartJob`,
//! one `RecordLogs` of all its lines in the batch, then `FinishJob`), stores the commands
//! of every VM of the batch in one transaction, and acks messages only after it committed.
//! A VM that refuses one of its commands is recorded step by step instead, as below.
//!
//! Errors are of two kinds. Transient ones (Postgres or NATS away, other writers first)
//! nak the messages with a delay that grows with each delivery. Permanent ones (a command
//! Postgres will never accept, a VM that refuses it for good, a message that does not
//! parse) are logged, counted and acked, so a bad job's redeliveries never hold back the
//! consumer; a job's lines or result that cannot be stored are stored as a short
//! placeholder instead, so the job still ends.

mod drift;
pub mod gauges;
mod liveness;
mod sweep;
mod watchdog;

pub use drift::{DriftCheck, DriftCheckConfig, DEFAULT_DRIFT_BATCH};
pub use gauges::{Gauges, GAUGES_EVERY};
pub use sweep::Sweep;
pub use watchdog::Watchdog;

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bus::async_nats::jetstream::{AckKind, Message};
use bus::{Bus, RunnerMessage, RunnerReport};
use domain::provisioning::{
    JobId, JobOutcome, LogLineIn, Provisioning, ProvisioningCommand, ProvisioningError, VmId,
};
use store::{sqlx, Actor, CommandError, Metadata, PgPool, StoreError};
use tokio_util::sync::CancellationToken;

const BATCH: usize = 500;
/// The VMs whose states the ingester keeps between batches: more than the jobs that stream
/// at once on a large deployment.
const KEPT_STATES: usize = 10_000;

/// The reports of one job in a batch, with the messages that carried them.
type Reports = Vec<(Message, RunnerReport)>;

/// The steps of each job of one VM in a batch, the jobs in the order they came.
type VmSteps = (VmId, Vec<(JobId, Vec<Step>)>);

pub struct Ingester {
    bus: Bus,
    pool: PgPool,
    /// Checks that each message is signed with its job's key.
    keys: bus::RunnerKeys,
    /// The VMs as this ingester last committed them, so a streaming job's VM is not loaded
    /// again for each batch (see `store::States`).
    states: store::States<Provisioning>,
}

impl Ingester {
    pub fn new(bus: Bus, pool: PgPool, keys: bus::RunnerKeys) -> Self {
        Ingester {
            bus,
            pool,
            keys,
            states: store::States::new(KEPT_STATES),
        }
    }

    pub async fn run(self, cancel: CancellationToken) {
        bus::run_consumer(
            &self.bus,
            "RUNNER",
            "ingester",
            BATCH,
            &cancel,
            |messages| async {
                self.ingest(messages).await;
                Ok(())
            },
        )
        .await;
    }

    /// Applies a batch of runner messages, job by job, each job's messages in order.
    #[tracing::instrument(skip_all, fields(messages = messages.len()))]
    pub async fn ingest(&self, messages: Vec<Message>) {
        let metrics = telemetry::metrics();
        metrics.ingester_batches.inc();
        metrics.ingester_messages.inc_by(messages.len() as u64);
        let mut jobs: Vec<((VmId, JobId), Reports)> = vec![];
        let mut heard: Vec<(VmId, JobId)> = vec![];
        for message in messages {
            let parsed: RunnerMessage = match serde_json::from_slice(&message.payload) {
                Ok(parsed) => parsed,
                Err(e) => {
                    let count = count_permanent();
                    tracing::error!(error = %e, subject = %message.subject, permanent_errors = count, "dropping a runner message that does not parse");
                    let _ = message.ack().await;
                    continue;
                }
            };
            if let Err(reason) = self.check(&message, &parsed) {
                refuse(message, &parsed, reason).await;
                continue;
            }
            let key = (parsed.vm_id, parsed.job_id);
            if !jobs.iter().any(|(k, _)| *k == key) {
                jobs.push((key, vec![]));
            }
            if first_delivery(&message) && !heard.contains(&key) {
                heard.push(key);
            }
            let Some((message, report)) = liveness::take_heartbeat(message, parsed.report).await
            else {
                continue;
            };
            match jobs.iter_mut().find(|(k, _)| *k == key) {
                Some((_, list)) => list.push((message, report)),
                None => jobs.push((key, vec![(message, report)])),
            }
        }
        let mut vms: Vec<VmSteps> = vec![];
        for ((vm, job), reports) in jobs {
            let steps = steps(job, reports);
            match vms.iter_mut().find(|(v, _)| *v == vm) {
                Some((_, jobs)) => jobs.push((job, steps)),
                None => vms.push((vm, vec![(job, steps)])),
            }
        }
        self.ingest_together(vms, &heard).await;
    }

    /// Whether the message is on its own job's subject and signed with that job's key: a
    /// runner knows only its own job's key, so it cannot report for another job.
    fn check(&self, message: &Message, parsed: &RunnerMessage) -> Result<(), String> {
        let kind = parsed.report.subject_kind();
        if message.subject.as_str() != self.bus.subjects.runner(parsed.vm_id, parsed.job_id, kind) {
            return Err("its subject is not its job's".into());
        }
        let signature = message
            .headers
            .as_ref()
            .and_then(|h| h.get(bus::SIGNATURE_HEADER))
            .map(|v| v.as_str());
        self.keys
            .verify(
                parsed.vm_id,
                parsed.job_id,
                &message.subject,
                &message.payload,
                signature,
            )
            .map_err(|e| e.to_string())
    }

    /// Records every VM's steps in one transaction and acks their messages after it
    /// committed. When another writer stored an event of one of the VMs first, the batch is
    /// decided once more on the VMs as they are now. The VMs that refused a step, and all of
    /// them if the transaction did not commit (another writer first again, a row Postgres
    /// refuses, Postgres away), are recorded again one step at a time by
    /// [`Self::ingest_job`], which handles each refusal and error as it comes: nothing of
    /// theirs was written.
    ///
    /// The runners are recorded as heard from (`heard`) while the transaction runs, on
    /// another connection: both are round trips, neither needs the other, and a finished
    /// job's liveness is forgotten only after both.
    async fn ingest_together(&self, vms: Vec<VmSteps>, heard: &[(VmId, JobId)]) {
        let together = async {
            match self.execute_together(&vms).await {
                Err(CommandError::Conflict) => self.execute_together(&vms).await,
                done => done,
            }
        };
        let ((), together) = tokio::join!(liveness::heard_from(&self.pool, heard), together);
        let results = match together {
            Ok(results) => results.into_iter().map(|r| r.is_ok()).collect(),
            Err(e) => {
                tracing::debug!(error = %e, "a batch did not commit at once; recording it step by step");
                vec![false; vms.len()]
            }
        };
        for ((vm, jobs), committed) in vms.into_iter().zip(results) {
            for (job, steps) in jobs {
                if !committed {
                    self.ingest_job(vm, job, steps).await;
                    continue;
                }
                let finishes = steps
                    .iter()
                    .any(|s| matches!(s.command, ProvisioningCommand::FinishJob { .. }));
                ack_all(steps.into_iter().flat_map(|s| s.messages).collect()).await;
                if finishes {
                    self.forget(vm, job).await;
                }
            }
        }
    }

    async fn execute_together(
        &self,
        vms: &[VmSteps],
    ) -> Result<Vec<store::Outcome<Provisioning>>, CommandError<ProvisioningError>> {
        let batches = vms
            .iter()
            .map(|(vm, jobs)| store::Batch {
                id: vm.to_string(),
                commands: jobs
                    .iter()
                    .flat_map(|(_, steps)| steps.iter().map(|s| s.command.clone()))
                    .collect(),
                metadata: metadata(*vm),
            })
            .collect();
        store::execute_together(&self.pool, &(), &self.states, batches).await
    }

    /// The job ended: the watchdog has nothing more to watch.
    async fn forget(&self, vm: VmId, job: JobId) {
        if let Err(e) = store::liveness::forget(&self.pool, vm, job).await {
            tracing::warn!(%vm, %job, error = %e, "could not forget the job's liveness");
        }
    }

    async fn ingest_job(&self, vm: VmId, job: JobId, steps: Vec<Step>) {
        let mut steps = steps.into_iter();
        while let Some(step) = steps.next() {
            if let Err(unrecorded) = self.apply(vm, job, step).await {
                // Their turn comes again, after what they wait for: so do the later ones.
                let later = steps.flat_map(|s| s.messages);
                for m in unrecorded.into_iter().chain(later) {
                    let delay = retry_delay(&m);
                    let _ = m.ack_with(AckKind::Nak(Some(delay))).await;
                }
                return;
            }
        }
    }

    /// Records one step and acks its messages; the messages it could not record, on error.
    async fn apply(&self, vm: VmId, job: JobId, step: Step) -> Result<(), Vec<Message>> {
        let Step {
            command,
            mut messages,
        } = step;
        let finishes = matches!(command, ProvisioningCommand::FinishJob { .. });
        match self.execute(vm, command.clone()).await {
            Ok(()) if finishes => self.forget(vm, job).await,
            Ok(()) => {}
            Err(CommandError::Rejected(ProvisioningError::LineGap { got, .. })) => {
                // Record the lines before the gap now, so each delivery makes progress.
                let ProvisioningCommand::RecordLogs { lines, .. } = command else {
                    return Err(messages);
                };
                let before = lines.iter().take_while(|l| l.line < got).count();
                let rest = messages.split_off(before);
                let lines = lines.into_iter().take(before).collect::<Vec<_>>();
                if !lines.is_empty() {
                    let command = ProvisioningCommand::RecordLogs { job_id: job, lines };
                    if self.execute(vm, command).await.is_err() {
                        return Err(messages.into_iter().chain(rest).collect());
                    }
                }
                ack_all(messages).await;
                tracing::info!(%vm, %job, "a line is still on its way; retrying the later ones");
                return Err(rest);
            }
            Err(CommandError::Rejected(e)) if e.is_retryable() => {
                tracing::info!(%vm, %job, reason = %e, "runner messages out of order; retrying");
                return Err(messages);
            }
            Err(CommandError::Rejected(e)) => {
                // A stale or repeated message: nothing to do but drop it.
                tracing::warn!(%vm, %job, reason = %e, "runner message refused by the VM");
            }
            Err(e) if is_permanent(&e) => {
                let count = count_permanent();
                tracing::error!(%vm, %job, error = %e, permanent_errors = count, "runner messages can never be stored as they are; storing a placeholder");
                if let Some(placeholder) = placeholder(command, &e) {
                    match self.execute(vm, placeholder).await {
                        Ok(()) | Err(CommandError::Rejected(_)) => {}
                        Err(e) if is_permanent(&e) => {
                            tracing::error!(%vm, %job, error = %e, "the placeholder was refused too; dropping the messages");
                        }
                        Err(_) => return Err(messages),
                    }
                }
            }
            Err(e) => {
                tracing::error!(%vm, %job, error = %e, "could not record runner messages; they will be redelivered");
                return Err(messages);
            }
        }
        ack_all(messages).await;
        Ok(())
    }

    async fn execute(
        &self,
        vm: VmId,
        command: ProvisioningCommand,
    ) -> Result<(), CommandError<ProvisioningError>> {
        store::execute::<Provisioning>(&self.pool, vm, command, &metadata(vm)).await?;
        Ok(())
    }
}

/// Runner messages are recorded as the runner's, correlated by their VM.
fn metadata(vm: VmId) -> Metadata {
    Metadata::new(Actor::Runner, vm.to_string())
}

/// How long a message waits before it is delivered again: a quarter second after its
/// first delivery, doubling with each one after, up to [`MAX_RETRY_DELAY`]. Kept short: a
/// message waits for a line that another ingester replica holds and commits within a
/// moment (replicas share the consumer, so a job's lines are split between them); a long
/// delay would hold every later line of the job back with it.
const RETRY_DELAY: Duration = Duration::from_millis(250);
const MAX_RETRY_DELAY: Duration = Duration::from_secs(2);

/// Whether JetStream delivers the message for the first time. Only a first delivery is a
/// sign of life: a message naked and delivered again (a line waiting for a missing one)
/// says nothing new about its runner, and would otherwise keep a dead runner's job looking
/// alive until its deadline.
fn first_delivery(message: &Message) -> bool {
    message.info().map_or(true, |info| info.delivered <= 1)
}

fn retry_delay(message: &Message) -> Duration {
    let delivered = message.info().map(|i| i.delivered).unwrap_or(1).max(1);
    let doublings = u32::try_from(delivered - 1).unwrap_or(u32::MAX).min(6);
    (RETRY_DELAY * 2u32.pow(doublings)).min(MAX_RETRY_DELAY)
}

/// Runner messages this process refused: not signed by their job's key.
static REFUSED: AtomicU64 = AtomicU64::new(0);

/// How many runner messages this process refused, unsigned or signed with a key that is not
/// their job's.
pub fn refused_messages() -> u64 {
    REFUSED.load(Ordering::Relaxed)
}

/// Terminates a message that is not its job's: never delivered again, nothing of it
/// recorded, not even as a sign of life. The log names the job it claims, never its content
/// nor its signature.
async fn refuse(message: Message, parsed: &RunnerMessage, reason: String) {
    let refused = REFUSED.fetch_add(1, Ordering::Relaxed) + 1;
    tracing::error!(
        vm_id = %parsed.vm_id,
        job_id = %parsed.job_id,
        subject = %message.subject,
        %reason,
        refused,
        "refusing a runner message not signed by its job's key"
    );
    if let Err(e) = message.ack_with(AckKind::Term).await {
        tracing::warn!(error = %e, "could not terminate a refused runner message");
    }
}

/// Runner messages this process could never store as they were.
static PERMANENT_ERRORS: AtomicU64 = AtomicU64::new(0);

fn count_permanent() -> u64 {
    PERMANENT_ERRORS.fetch_add(1, Ordering::Relaxed) + 1
}

/// How many runner messages this process could never store as they were.
pub fn permanent_errors() -> u64 {
    PERMANENT_ERRORS.load(Ordering::Relaxed)
}

/// An error no redelivery can cure: Postgres refused the data itself (SQLSTATE class 22,
/// data exception, such as an untranslatable character; or 23, a constraint other than the
/// unique key that signals a concurrent writer, which the command path handles), or the
/// events could not be encoded. Connection errors, timeouts and conflicts are transient.
fn is_permanent(error: &CommandError<ProvisioningError>) -> bool {
    match error {
        CommandError::Store(StoreError::Payload(_) | StoreError::Row(_)) => true,
        CommandError::Store(StoreError::Database(sqlx::Error::Database(e))) => e
            .code()
            .is_some_and(|code| code.starts_with("22") || code.starts_with("23")),
        _ => false,
    }
}

/// What to store instead of a command Postgres will never accept: the same lines, each
/// saying it could not be stored (so the line numbers stay whole and the result can
/// follow), or the result without its diagnostics and outputs (so the job still ends).
fn placeholder(
    command: ProvisioningCommand,
    error: &CommandError<ProvisioningError>,
) -> Option<ProvisioningCommand> {
    let note = format!("[this could not be stored: {error}]");
    match command {
        ProvisioningCommand::RecordLogs { job_id, lines } => {
            let lines = lines
                .into_iter()
                .map(|l| LogLineIn {
                    line: l.line,
                    level: "error".into(),
                    kind: "placeholder".into(),
                    message: note.clone(),
                })
                .collect();
            Some(ProvisioningCommand::RecordLogs { job_id, lines })
        }
        ProvisioningCommand::FinishJob { job_id, outcome } => {
            Some(ProvisioningCommand::FinishJob {
                job_id,
                outcome: JobOutcome {
                    exit_code: if outcome.exit_code == 0 {
                        1
                    } else {
                        outcome.exit_code
                    },
                    outputs: Default::default(),
                    diagnostics: vec![domain::provisioning::Diagnostic {
                        severity: domain::provisioning::Severity::Error,
                        summary: "the job's result could not be stored".into(),
                        detail: note,
                    }],
                    lines: outcome.lines,
                    drift: vec![],
                },
            })
        }
        _ => None,
    }
}

/// A command and the messages it comes from.
struct Step {
    command: ProvisioningCommand,
    messages: Vec<Message>,
}

/// One job's reports as commands: its start, then all its lines in the batch as one
/// `RecordLogs` sorted by line number (with their messages), then its taskservs' progress
/// in the order reported, then its result. Lines are
/// gathered across the batch, not only when consecutive: a line redelivered after a later
/// one (both naked together at a gap) must not stay behind it at every redelivery.
fn steps(job_id: JobId, reports: Reports) -> Vec<Step> {
    let mut starts: Vec<Step> = vec![];
    let mut taskservs: Vec<Step> = vec![];
    let mut results: Vec<Step> = vec![];
    let mut lines: Vec<(Message, LogLineIn)> = vec![];
    for (message, report) in reports {
        let command = match report {
            RunnerReport::Log {
                line,
                level,
                kind,
                message: text,
            } => {
                let line = LogLineIn {
                    line,
                    level,
                    kind,
                    message: text,
                };
                lines.push((message, line));
                continue;
            }
            RunnerReport::Started { runner } => {
                let command = ProvisioningCommand::StartJob { job_id, runner };
                starts.push(Step {
                    command,
                    messages: vec![message],
                });
                continue;
            }
            // Taken out before (`liveness::take_heartbeat`): nothing to record.
            RunnerReport::Heartbeat { .. } => continue,
            RunnerReport::Taskserv { step, report } => {
                let command = ProvisioningCommand::ReportTaskserv {
                    job_id,
                    step,
                    report,
                };
                taskservs.push(Step {
                    command,
                    messages: vec![message],
                });
                continue;
            }
            RunnerReport::Result {
                exit_code,
                outputs,
                diagnostics,
                lines,
                drift,
            } => ProvisioningCommand::FinishJob {
                job_id,
                outcome: JobOutcome {
                    exit_code,
                    outputs,
                    diagnostics,
                    lines,
                    drift,
                },
            },
        };
        results.push(Step {
            command,
            messages: vec![message],
        });
    }
    starts.extend(record_logs(job_id, &mut lines));
    starts.extend(taskservs);
    starts.extend(results);
    starts
}

fn record_logs(job_id: JobId, lines: &mut Vec<(Message, LogLineIn)>) -> Option<Step> {
    if lines.is_empty() {
        return None;
    }
    lines.sort_by_key(|(_, l)| l.line);
    let (messages, lines): (Vec<_>, Vec<_>) = std::mem::take(lines).into_iter().unzip();
    Some(Step {
        command: ProvisioningCommand::RecordLogs { job_id, lines },
        messages,
    })
}

async fn ack_all(messages: Vec<Message>) {
    for m in messages {
        if let Err(e) = m.ack().await {
            tracing::warn!(error = %e, "could not ack a runner message");
        }
    }
}
