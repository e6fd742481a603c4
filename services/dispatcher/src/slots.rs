//! Runner slots: the dispatcher pulls a job from JetStream only when a slot is free, one
//! message per pull, so jobs past the limit wait in the stream and start in the order they
//! were queued. A slot is taken when a runner starts and freed when the job is no longer the
//! VM's active job in the event store (its result was recorded, or the watchdog failed it):
//! the same rule for local processes and Kubernetes Jobs, and one that counts a runner
//! until its outcome is in, not merely until its process ends. Slots are per process: after
//! a restart, runners still running from before are not counted.

use std::sync::Arc;
use std::time::Duration;

use bus::async_nats::connection::State;
use bus::async_nats::jetstream::consumer::PullConsumer;
use bus::async_nats::jetstream::Message;
use domain::provisioning::{JobId, Provisioning, VmId};
use futures::StreamExt;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

use crate::Dispatcher;

/// How long one pull waits for a job before it asks again.
const PULL_WAIT: Duration = Duration::from_secs(5);
/// How often a running job is checked for its end.
const END_CHECK: Duration = Duration::from_secs(1);
/// How often a disconnected client is checked for its connection being back.
const RECONNECT_CHECK: Duration = Duration::from_millis(100);

pub(crate) async fn run(dispatcher: Arc<Dispatcher>, cancel: CancellationToken) {
    let slots = Arc::new(Semaphore::new(dispatcher.max_runners.max(1)));
    let mut consumer: Option<PullConsumer> = None;
    while !cancel.is_cancelled() {
        let slot = tokio::select! {
            _ = cancel.cancelled() => return,
            slot = slots.clone().acquire_owned() => slot.expect("the semaphore is never closed"),
        };
        let pulled = tokio::select! {
            _ = cancel.cancelled() => return,
            pulled = async {
                connected(&dispatcher.bus).await;
                next_job(&dispatcher, &mut consumer).await
            } => pulled,
        };
        let message = match pulled {
            Ok(Some(message)) => message,
            Ok(None) => continue,
            Err(e) => {
                tracing::error!(error = %e, "could not pull a job; trying again");
                consumer = None;
                tokio::select! {
                    _ = cancel.cancelled() => return,
                    _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                }
                continue;
            }
        };
        let job = job_of(&message);
        match dispatcher.dispatch(message).await {
            Ok(true) => {
                if let Some((vm, job)) = job {
                    tokio::spawn(hold(dispatcher.clone(), slot, vm, job, cancel.clone()));
                }
            }
            Ok(false) => {}
            Err(e) => tracing::warn!(error = %e, "could not ack or nak a job message"),
        }
    }
}

/// Returns once the client is connected to NATS. A pull sent while the connection is down
/// waits in the client's queue; when its wait ends before the connection is back, the
/// client sends the pull and its unsubscribe together once it reconnects, the server can
/// deliver a job to the pull between the two, and the client drops it: the job would wait
/// for the consumer's ack wait. So pulls go out on a live connection only.
async fn connected(bus: &bus::Bus) {
    while bus.client.connection_state() != State::Connected {
        tokio::time::sleep(RECONNECT_CHECK).await;
    }
}

/// The next job message, waiting up to `PULL_WAIT`; `None` when none came.
async fn next_job(
    dispatcher: &Dispatcher,
    consumer: &mut Option<PullConsumer>,
) -> Result<Option<Message>, bus::async_nats::Error> {
    let pull = match consumer {
        Some(consumer) => consumer,
        None => consumer.insert(bus::consumer(&dispatcher.bus, "JOBS", "dispatcher").await?),
    };
    let mut batch = pull
        .batch()
        .max_messages(1)
        .expires(PULL_WAIT)
        .messages()
        .await?;
    match batch.next().await {
        Some(Ok(message)) => Ok(Some(message)),
        Some(Err(e)) => Err(e),
        None => Ok(None),
    }
}

fn job_of(message: &Message) -> Option<(VmId, JobId)> {
    let job: bus::JobMessage = serde_json::from_slice(&message.payload).ok()?;
    Some((job.vm_id, job.job_id))
}

/// Keeps the slot until the job is no longer the VM's active one (or the daemon stops).
async fn hold(
    dispatcher: Arc<Dispatcher>,
    slot: OwnedSemaphorePermit,
    vm: VmId,
    job: JobId,
    cancel: CancellationToken,
) {
    loop {
        tokio::select! {
            _ = cancel.cancelled() => break,
            _ = tokio::time::sleep(END_CHECK) => {}
        }
        match store::load::<Provisioning>(&dispatcher.pool, &vm.to_string()).await {
            Ok((state, _)) if state.lifecycle().active_job.is_none_or(|j| j.id != job) => break,
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(%vm, %job, error = %e, "could not check whether the job ended")
            }
        }
    }
    drop(slot);
}
