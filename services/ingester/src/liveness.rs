//! Signs of life: every runner message says its job's runner is alive. The ingester records
//! the time per job (`store::liveness`), one row per job, for the watchdog.

use bus::async_nats::jetstream::Message;
use bus::RunnerReport;
use domain::provisioning::{JobId, VmId};
use store::PgPool;

/// Records that the runners of `jobs` were heard from now, in one statement. A failure is
/// only logged: the messages are still recorded, and the next ones touch the rows again.
pub async fn heard_from(pool: &PgPool, jobs: &[(VmId, JobId)]) {
    if jobs.is_empty() {
        return;
    }
    if let Err(e) = store::liveness::touch_all(pool, jobs).await {
        tracing::warn!(jobs = jobs.len(), error = %e, "could not record that the runners are alive");
    }
}

/// Acks a heartbeat at once: it carries no command, only the sign of life recorded above.
/// Returns the report back when it is not a heartbeat.
pub async fn take_heartbeat(
    message: Message,
    report: RunnerReport,
) -> Option<(Message, RunnerReport)> {
    if let RunnerReport::Heartbeat { .. } = report {
        if let Err(e) = message.ack().await {
            tracing::warn!(error = %e, "could not ack a heartbeat");
        }
        return None;
    }
    Some((message, report))
}
