//! The daemon killed (SIGKILL) at each stage of a job and started again: every job still
//! runs once, every line and event arrives once.

use std::time::{Duration, Instant};

use crate::checks::{check_all, took, Expect};
use crate::daemon::{Daemon, Setup};
use crate::wrapper::Wrapper;

// A message the killed daemon had received but not acknowledged comes again after the
// consumer's ack wait (nats/jetstream.toml: 60 s for the ingester, 120 s for the dispatcher).
const WAIT: Duration = Duration::from_secs(200);

#[tokio::test]
async fn a_daemon_killed_while_the_runner_streams_loses_and_repeats_nothing() {
    let started = Instant::now();
    let wrapper = Wrapper::new();
    let mut daemon = Daemon::start(Setup {
        terraform_bin: wrapper.path.clone(),
        ..Setup::default()
    })
    .await;
    let mut expected = vec![];
    for round in 0..3 {
        wrapper.hold();
        let vm = daemon.create_vm(&format!("stream-{round}")).await;
        wrapper.wait_held(&vm, WAIT).await;
        daemon.kill();
        wrapper.release();
        daemon.start_as("run").await;
        daemon.wait_for_status(&vm, "running", WAIT).await;
        expected.push(Expect::running(&vm));
    }
    check_all(&daemon, &wrapper, &expected).await;
    took("a_daemon_killed_while_the_runner_streams", started);
}
