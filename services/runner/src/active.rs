//! Before it starts Terraform, the runner asks the daemon whether its job is still the
//! VM's active one (a NATS request the dispatcher answers from the event store). A runner
//! that starts late (a pod pending for an hour, a job the watchdog already failed) so ends
//! without touching the cloud.

use std::time::{Duration, Instant};

use bus::Bus;

use crate::RunnerConfig;

/// How long the runner keeps asking while nobody answers (a daemon restarting).
const ASK_FOR: Duration = Duration::from_secs(30);
const ANSWER_WITHIN: Duration = Duration::from_secs(3);

/// Whether the job is still active: `Some(false)` when the daemon says it is not, `None`
/// when no answer came within `ASK_FOR`. The caller goes on then: the claim already
/// guarantees one runner per job, and a daemon that stays away must not fail every job.
pub(crate) async fn job_is_active(bus: &Bus, config: &RunnerConfig) -> Option<bool> {
    let subject = bus.subjects.job_active(config.vm_id, config.job_id);
    let until = Instant::now() + ASK_FOR;
    while Instant::now() < until {
        let asked = tokio::time::timeout(
            ANSWER_WITHIN,
            bus.client.request(subject.clone(), Default::default()),
        )
        .await;
        match asked {
            Ok(Ok(answer)) => {
                let answer: serde_json::Value = serde_json::from_slice(&answer.payload).ok()?;
                return answer.get("active").and_then(|a| a.as_bool());
            }
            Ok(Err(e)) => tracing::info!(error = %e, "no answer about the job's status yet"),
            Err(_) => tracing::info!("no answer about the job's status yet"),
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    tracing::warn!("nobody answered whether the job is still active; going on");
    None
}
