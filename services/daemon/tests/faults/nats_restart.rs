//! NATS stopped for 25 s (SIGKILL, as a crash) and started again with the same store while
//! jobs run and users send commands: the runners, the consumers and the relay reconnect,
//! and every job completes once.
//!
//! 25 s is longer than a dispatcher's pull waits on the client's side (10 s): a pull sent
//! while the connection is down would be sent on reconnect together with the unsubscribe
//! of its ended wait, and the server could deliver a job to it that the client drops; the
//! job would wait for the consumer's ack wait. The jobs queued during the outage must
//! start at once instead.

use std::time::{Duration, Instant};

use crate::checks::{check_all, took, Expect};
use crate::daemon::{Daemon, Setup};
use crate::nats::PrivateNats;
use crate::wrapper::Wrapper;

const WAIT: Duration = Duration::from_secs(90);
const OUTAGE: Duration = Duration::from_secs(25);
/// Well within the dispatcher's ack wait (30 s, nats/jetstream.toml): a job message lost
/// to a dropped pull would come again only after it.
const START_AFTER_OUTAGE: Duration = Duration::from_secs(15);

#[tokio::test]
async fn jobs_and_commands_survive_a_nats_restart() {
    let started = Instant::now();
    // Dropped after the daemon (declared before it), which deletes its streams there.
    let mut nats = PrivateNats::start().await;
    let wrapper = Wrapper::new();
    let daemon = Daemon::start(Setup {
        nats_url: nats.url(),
        terraform_bin: wrapper.path.clone(),
        ..Setup::default()
    })
    .await;

    // One VM to destroy during the outage.
    let to_destroy = daemon.create_vm("restart-destroy").await;
    daemon
        .wait_for_status(&to_destroy, "provisioned", WAIT)
        .await;

    // Runs that print over the whole outage: eight markers, a second apart.
    wrapper.set_markers(8);
    wrapper.set_pause(1.0);
    let mut running = vec![];
    for i in 0..3 {
        running.push(daemon.create_vm(&format!("restart-run-{i}")).await);
    }
    for vm in &running {
        wrapper.wait_invocations(vm, "apply", 1, WAIT).await;
    }

    let down = Instant::now();
    nats.stop();
    // Commands while NATS is away: Postgres takes them, the relay publishes them later.
    let mut during = vec![];
    for i in 0..2 {
        during.push(daemon.create_vm(&format!("restart-during-{i}")).await);
    }
    daemon.destroy_vm(&to_destroy).await;
    let commands_answered = down.elapsed();
    tokio::time::sleep(OUTAGE.saturating_sub(down.elapsed())).await;
    nats.start_again().await;
    let outage = down.elapsed();
    let back = Instant::now();

    for vm in &during {
        daemon
            .wait_for_job_start(vm, START_AFTER_OUTAGE.saturating_sub(back.elapsed()))
            .await;
    }
    let started_after = back.elapsed();
    for vm in running.iter().chain(&during) {
        daemon.wait_for_status(vm, "provisioned", WAIT).await;
    }
    daemon.wait_for_status(&to_destroy, "destroyed", WAIT).await;
    let recovered = back.elapsed();
    eprintln!(
        "NATS restart: down {:.1} s (3 commands answered in {:.2} s while down); \
         the jobs queued meanwhile started {:.1} s and every job was done {:.1} s after \
         NATS was back",
        outage.as_secs_f64(),
        commands_answered.as_secs_f64(),
        started_after.as_secs_f64(),
        recovered.as_secs_f64()
    );

    // An ack sent while NATS was away is lost: the message comes again after the
    // consumer's ack wait (the ingester's 60 s) and is recognised as a copy.
    let drained = crate::nats_cluster::drain_time(&daemon).await;
    eprintln!(
        "NATS restart: consumers drained {:.1} s after every job was done",
        drained.as_secs_f64()
    );

    let mut expected = vec![Expect::destroyed(&to_destroy)];
    expected.extend(
        running
            .iter()
            .chain(&during)
            .map(|vm| Expect::provisioned(vm)),
    );
    check_all(&daemon, &wrapper, &expected).await;
    took("jobs_and_commands_survive_a_nats_restart", started);
}
