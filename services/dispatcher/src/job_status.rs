//! Answers runners that ask whether their job is still the VM's active one, and whether a
//! cancel was asked of it (`<prefix>.control.job_active.<vm_id>.<job>`), from the event
//! store: before they start Terraform (a runner whose job the watchdog failed, or that
//! starts late, so never changes anything), and with every heartbeat (so a cancel reaches a
//! runner that missed its event).

use domain::provisioning::{JobId, Provisioning, VmId};
use futures::StreamExt;
use store::PgPool;
use tokio_util::sync::CancellationToken;

/// Answers `{"active": true|false, "cancel": true|false}` until cancelled; replicas share the questions (a queue
/// group). Reconnects its subscription a second after it fails.
pub async fn answer_job_status(pool: PgPool, bus: bus::Bus, cancel: CancellationToken) {
    while !cancel.is_cancelled() {
        let subject = bus.subjects.job_active_all();
        let mut questions = match bus
            .client
            .queue_subscribe(subject, "job-status".into())
            .await
        {
            Ok(subscription) => subscription,
            Err(e) => {
                tracing::error!(error = %e, "could not subscribe to job status questions");
                tokio::select! {
                    _ = cancel.cancelled() => return,
                    _ = tokio::time::sleep(std::time::Duration::from_secs(1)) => continue,
                }
            }
        };
        loop {
            let question = tokio::select! {
                _ = cancel.cancelled() => return,
                q = questions.next() => q,
            };
            let Some(question) = question else { break };
            let Some(reply) = question.reply.clone() else {
                continue;
            };
            let Some((vm, job)) = parse(&question.subject) else {
                continue;
            };
            // No answer when the store cannot say: the runner asks again.
            match status(&pool, vm, job).await {
                Ok((active, cancel)) => {
                    let answer = serde_json::json!({ "active": active, "cancel": cancel });
                    let answer = answer.to_string();
                    if let Err(e) = bus.client.publish(reply, answer.into()).await {
                        tracing::warn!(error = %e, "could not answer a job status question");
                    }
                }
                Err(e) => tracing::warn!(%vm, %job, error = %e, "could not read the job's status"),
            }
        }
    }
}

/// The VM and job of `<prefix>.control.job_active.<vm_id>.<job>`.
fn parse(subject: &str) -> Option<(VmId, JobId)> {
    let mut tokens = subject.rsplit('.');
    let job = tokens.next()?.parse::<u32>().ok()?;
    let vm = tokens.next()?.parse::<VmId>().ok()?;
    Some((vm, JobId::new(job)))
}

/// Whether the job is active, and whether a cancel was asked of it.
async fn status(pool: &PgPool, vm: VmId, job: JobId) -> Result<(bool, bool), store::StoreError> {
    let (state, _) = store::load::<Provisioning>(pool, &vm.to_string()).await?;
    let active = state.lifecycle().active_job.filter(|j| j.id == job);
    Ok((active.is_some(), active.is_some_and(|j| j.cancel_requested)))
}
