//! The runner's heartbeat: a `heartbeat` report every few seconds for as long as the runner
//! lives, however quiet Terraform is (a long `init`, a cloud API that takes minutes), so
//! the watchdog judges silence from the runner itself. It has its own publisher, so it
//! never waits behind the lines. After each beat it asks whether a cancel was asked of the
//! job, in case the runner missed the cancel's event.

use std::time::Duration;

use bus::{Bus, RunnerMessage, RunnerReport};

use crate::signals::Interrupts;
use crate::RunnerConfig;

const DEFAULT_EVERY: Duration = Duration::from_secs(10);

/// Sends heartbeats until the returned guard is dropped.
pub(crate) fn start(bus: &Bus, config: &RunnerConfig, interrupts: Interrupts) -> Beating {
    let every = std::env::var(crate::env::HEARTBEAT_SECS)
        .ok()
        .and_then(|secs| secs.parse::<f64>().ok())
        .filter(|secs| *secs > 0.0)
        .map_or(DEFAULT_EVERY, Duration::from_secs_f64);
    let (bus, vm_id, job_id) = (bus.clone(), config.vm_id, config.job_id);
    let key = config.signing_key.clone();
    let task = tokio::spawn(async move {
        for beat in 1.. {
            tokio::time::sleep(every).await;
            let message = RunnerMessage {
                vm_id,
                job_id,
                report: RunnerReport::Heartbeat { beat },
            };
            // A lost heartbeat is no failure: the next one follows, and lines count too.
            if let Err(e) = bus.publish_runner_message(&key, &message).await {
                tracing::warn!(error = %e, "could not send a heartbeat");
            }
            if crate::active::ask(&bus, vm_id, job_id)
                .await
                .is_some_and(|s| s.cancel)
            {
                interrupts.cancel("a cancel was asked of the job");
            }
        }
    });
    Beating(task)
}

/// Stops the heartbeat when dropped.
pub(crate) struct Beating(tokio::task::JoinHandle<()>);

impl Drop for Beating {
    fn drop(&mut self) {
        self.0.abort();
    }
}
