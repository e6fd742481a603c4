//! The runner asks the daemon whether its job is still the VM's active one, and whether a
//! cancel was asked of it (a NATS request the dispatcher answers from the event store):
//! before it starts Terraform, so a runner that starts late (a pod pending for an hour, a
//! job the watchdog already failed) ends without touching the cloud; and with every
//! heartbeat, so a cancel whose event the runner missed still reaches it.

use std::time::{Duration, Instant};

use bus::Bus;
use domain::provisioning::{JobId, VmId};
use futures::StreamExt;

use crate::signals::Interrupts;
use crate::RunnerConfig;

/// How long the runner keeps asking while nobody answers (a daemon restarting).
const ASK_FOR: Duration = Duration::from_secs(30);
const ANSWER_WITHIN: Duration = Duration::from_secs(3);

/// What the daemon says of the job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct JobStatus {
    pub active: bool,
    pub cancel: bool,
}

/// The job's status, asking until `ASK_FOR` passed; `None` when no answer came. The caller
/// goes on then: the claim already guarantees one runner per job, and a daemon that stays
/// away must not fail every job.
pub(crate) async fn job_status(bus: &Bus, config: &RunnerConfig) -> Option<JobStatus> {
    let until = Instant::now() + ASK_FOR;
    while Instant::now() < until {
        if let Some(status) = ask(bus, config.vm_id, config.job_id).await {
            return Some(status);
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    tracing::warn!("nobody answered whether the job is still active; going on");
    None
}

/// Asks once; `None` when no answer came in time.
pub(crate) async fn ask(bus: &Bus, vm: VmId, job: JobId) -> Option<JobStatus> {
    let subject = bus.subjects.job_active(vm, job);
    let asked = tokio::time::timeout(
        ANSWER_WITHIN,
        bus.client.request(subject, Default::default()),
    )
    .await;
    match asked {
        Ok(Ok(answer)) => {
            let answer: serde_json::Value = serde_json::from_slice(&answer.payload).ok()?;
            Some(JobStatus {
                active: answer.get("active")?.as_bool()?,
                cancel: answer
                    .get("cancel")
                    .and_then(|c| c.as_bool())
                    .unwrap_or(false),
            })
        }
        Ok(Err(e)) => {
            tracing::info!(error = %e, "no answer about the job's status");
            None
        }
        Err(_) => {
            tracing::info!("no answer about the job's status");
            None
        }
    }
}

/// Follows the VM's events (core NATS, as the relay publishes them) and interrupts
/// Terraform once when a cancel is asked of this job. Stops when the returned guard drops.
pub(crate) async fn follow_cancels(
    bus: &Bus,
    config: &RunnerConfig,
    interrupts: Interrupts,
) -> Option<Following> {
    let subject = bus.subjects.event_of(config.vm_id, "JobCancelRequested");
    let mut events = match bus.client.subscribe(subject).await {
        Ok(events) => events,
        Err(e) => {
            tracing::warn!(error = %e, "could not follow the job's cancels; heartbeats will ask");
            return None;
        }
    };
    let job = config.job_id.get();
    let task = tokio::spawn(async move {
        while let Some(event) = events.next().await {
            let envelope: serde_json::Value = match serde_json::from_slice(&event.payload) {
                Ok(envelope) => envelope,
                Err(_) => continue,
            };
            let of_this_job = envelope
                .pointer("/data/job_id")
                .and_then(|j| j.as_u64())
                .is_some_and(|j| j == u64::from(job));
            if of_this_job {
                interrupts.cancel("a cancel was asked of the job");
            }
        }
    });
    Some(Following(task))
}

/// Stops following the job's cancels when dropped.
pub(crate) struct Following(tokio::task::JoinHandle<()>);

impl Drop for Following {
    fn drop(&mut self) {
        self.0.abort();
    }
}
