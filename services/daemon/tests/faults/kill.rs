//! The daemon killed (SIGKILL) at each stage of a job, three times each, and started again:
//! every job still runs once (or, killed between claim and start, fails with a reason),
//! every line and event arrives once. The rounds of a test overlap: a message the killed
//! daemon had received but not acknowledged comes again only after the consumer's ack wait
//! (nats/jetstream.toml: 60 s for the ingester, 30 s for the dispatcher), so the rounds
//! share that wait.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::checks::{check_all, took, Expect};
use crate::daemon::{signal, Daemon, Setup};
use crate::database::nats_url;
use crate::proxy::{target_of, Mode, Proxy};
use crate::wrapper::Wrapper;

const WAIT: Duration = Duration::from_secs(200);
const ROUNDS: usize = 3;

fn setup(wrapper: &Wrapper) -> Setup {
    Setup {
        terraform_bin: wrapper.path.clone(),
        ..Setup::default()
    }
}

#[tokio::test]
async fn a_daemon_killed_after_a_commit_and_before_the_relay_publishes_runs_the_job_once() {
    let started = Instant::now();
    let wrapper = Wrapper::new();
    // The daemon reaches NATS through a proxy that the test stalls: the relay cannot
    // publish what the API committed.
    let proxy = Proxy::start(target_of(&nats_url())).await;
    // A kill may land after the dispatcher claimed the job and before it started the
    // runner: the watchdog then queues the job again after this silence (as in the claim
    // test below), and it runs once.
    let mut daemon = Daemon::start(
        Setup {
            nats_url: proxy.url(&nats_url()),
            ..setup(&wrapper)
        }
        .env("PROVISIONING_JOB_SILENCE_SECS", 15),
    )
    .await;
    let mut vms = vec![];
    for round in 0..ROUNDS {
        proxy.set(Mode::Stall);
        let vm = daemon.create_vm(&format!("commit-{round}")).await;
        // Committed, and not published: the stream has none of its events.
        let committed: i64 =
            store::sqlx::query_scalar("SELECT count(*) FROM events WHERE aggregate_id = $1")
                .bind(&vm)
                .fetch_one(&daemon.pool)
                .await
                .unwrap();
        assert!(committed > 0);
        daemon.kill();
        proxy.set(Mode::Open);
        assert_eq!(
            wrapper.count(&vm, "apply"),
            0,
            "the job ran before the kill"
        );
        daemon.start_as("run").await;
        vms.push(vm);
    }
    for vm in &vms {
        daemon.wait_for_status(vm, "provisioned", WAIT).await;
    }
    let expected: Vec<Expect> = vms.iter().map(|vm| Expect::provisioned(vm)).collect();
    check_all(&daemon, &wrapper, &expected).await;
    took("killed_after_commit_before_publish", started);
}

/// A runner binary that waits (before the real runner starts) while `$DIR/hold` exists,
/// writing its pid to `$DIR/held`.
fn held_runner(dir: &std::path::Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join("runner");
    let script = format!(
        "#!/bin/sh\nDIR='{}'\nif [ -e \"$DIR/hold\" ]; then echo $$ > \"$DIR/held\"; \
         while [ -e \"$DIR/hold\" ]; do sleep 0.05; done; fi\nexec '{}' \"$@\"\n",
        dir.display(),
        crate::daemon::runner_bin().display()
    );
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

#[tokio::test]
async fn a_daemon_killed_between_claiming_a_job_and_starting_its_runner_runs_the_job_once_later() {
    let started = Instant::now();
    let wrapper = Wrapper::new();
    let runners = tempfile::tempdir().unwrap();
    // The watchdog queues a claimed job again when it stays silent this long with no runner
    // recorded; above the runners' heartbeat (10 s), so that healthy runs are left alone.
    let silence = 15;
    let mut daemon = Daemon::start(
        setup(&wrapper)
            .env(
                "PROVISIONING_RUNNER_BIN",
                held_runner(runners.path()).display(),
            )
            .env("PROVISIONING_JOB_SILENCE_SECS", silence),
    )
    .await;
    let hold = runners.path().join("hold");
    let held = runners.path().join("held");
    let mut vms = vec![];
    for round in 0..ROUNDS {
        std::fs::write(&hold, "").unwrap();
        let vm = daemon.create_vm(&format!("claim-{round}")).await;
        let pid: i32 = crate::daemon::wait_for_file(&held, WAIT)
            .await
            .trim()
            .parse()
            .unwrap();
        std::fs::remove_file(&held).unwrap();
        // The job is claimed and its runner not started: the daemon dies, and the runner it
        // was about to start never runs.
        daemon.kill();
        signal("KILL", pid);
        std::fs::remove_file(&hold).unwrap();
        daemon.start_as("run").await;
        vms.push((vm, Instant::now()));
    }
    let mut expected = vec![];
    for (vm, restarted) in &vms {
        daemon.wait_for_status(vm, "provisioned", WAIT).await;
        eprintln!(
            "VM {vm} provisioned {:.1} s after the restart",
            restarted.elapsed().as_secs_f64()
        );
        expected.push(Expect::provisioned(vm));
    }
    check_all(&daemon, &wrapper, &expected).await;
    took("killed_between_claim_and_runner_start", started);
}

#[tokio::test]
async fn a_daemon_killed_while_the_runner_streams_loses_and_repeats_nothing() {
    let started = Instant::now();
    let wrapper = Wrapper::new();
    wrapper.set_markers(6);
    let mut daemon = Daemon::start(setup(&wrapper)).await;
    let mut vms = vec![];
    for round in 0..ROUNDS {
        wrapper.hold();
        let vm = daemon.create_vm(&format!("stream-{round}")).await;
        wrapper.wait_held(&vm, WAIT).await;
        daemon.kill();
        wrapper.release();
        daemon.start_as("run").await;
        vms.push(vm);
    }
    for vm in &vms {
        daemon.wait_for_status(vm, "provisioned", WAIT).await;
    }
    let expected: Vec<Expect> = vms.iter().map(|vm| Expect::provisioned(vm)).collect();
    check_all(&daemon, &wrapper, &expected).await;
    took("killed_while_the_runner_streams", started);
}

#[tokio::test]
async fn a_daemon_killed_after_a_result_is_published_and_before_it_is_ingested_records_it_once() {
    let started = Instant::now();
    let wrapper = Wrapper::new();
    let mut daemon = Daemon::start(setup(&wrapper)).await;
    let mut vms = vec![];
    for round in 0..ROUNDS {
        wrapper.hold();
        let vm = daemon.create_vm(&format!("result-{round}")).await;
        let run = wrapper.wait_held(&vm, WAIT).await;
        // The daemon comes back without its ingester, the runner finishes and publishes its
        // result, then that daemon is killed too.
        daemon.kill();
        daemon.start_as("dispatcher").await;
        wrapper.release();
        wait_gone(run).await;
        let runner = wrapper.invocations().last().unwrap().runner;
        wait_gone(runner).await;
        assert_ne!(
            daemon.status_in_db(&vm).await.as_deref(),
            Some("provisioned"),
            "the result was ingested without an ingester"
        );
        daemon.kill();
        daemon.start_as("run").await;
        vms.push(vm);
    }
    for vm in &vms {
        daemon.wait_for_status(vm, "provisioned", WAIT).await;
    }
    let expected: Vec<Expect> = vms.iter().map(|vm| Expect::provisioned(vm)).collect();
    check_all(&daemon, &wrapper, &expected).await;
    took("killed_after_publish_before_ingest", started);
}

/// Waits until process `pid` has exited.
async fn wait_gone(pid: i32) {
    let deadline = Instant::now() + WAIT;
    while std::path::Path::new(&format!("/proc/{pid}")).exists() {
        assert!(Instant::now() < deadline, "process {pid} never ended");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
