//! Two daemons (every role twice) on one database and one NATS prefix: 50 VMs created and
//! destroyed through both APIs alternately, ten at a time. Every command answers `202` (no
//! conflict between the two reaches a user), each job runs once, and both daemons ran
//! runners.

use std::time::{Duration, Instant};

use futures::{stream, StreamExt};

use crate::checks::{check_all, took, Expect};
use crate::daemon::{Daemon, Setup};
use crate::wrapper::Wrapper;

const VMS: usize = 50;
const AT_ONCE: usize = 10;
const WAIT: Duration = Duration::from_secs(300);

fn setup(wrapper: &Wrapper) -> Setup {
    Setup {
        terraform_bin: wrapper.path.clone(),
        ..Setup::default()
    }
}

#[tokio::test]
async fn two_daemons_share_the_jobs_and_run_each_once() {
    let started = Instant::now();
    let wrapper = Wrapper::new();
    wrapper.set_markers(1);
    // The replica is dropped first (declared last); the first daemon owns the database.
    let first = Daemon::start(setup(&wrapper)).await;
    let second = first.start_replica(setup(&wrapper)).await;
    let daemons = [&first, &second];

    let vms: Vec<String> = stream::iter(0..VMS)
        .map(|i| async move { daemons[i % 2].create_vm(&format!("two-{i}")).await })
        .buffer_unordered(AT_ONCE)
        .collect()
        .await;
    for vm in &vms {
        first.wait_for_status(vm, "provisioned", WAIT).await;
    }
    let created = started.elapsed();
    // Each destroy through the other API than its create's, where the order allows.
    stream::iter(vms.iter().enumerate())
        .map(|(i, vm)| daemons[(i + 1) % 2].destroy_vm(vm))
        .buffer_unordered(AT_ONCE)
        .collect::<Vec<()>>()
        .await;
    for vm in &vms {
        second.wait_for_status(vm, "destroyed", WAIT).await;
    }

    let jobs = [job_dirs(&first), job_dirs(&second)];
    eprintln!(
        "two daemons: {VMS} VMs provisioned after {:.1} s, destroyed after {:.1} s; \
         jobs run by each daemon: {jobs:?}",
        created.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
    assert_eq!(jobs[0] + jobs[1], 2 * VMS, "a job ran twice or not at all");
    assert!(
        jobs.iter().all(|&n| n > 0),
        "one daemon ran every runner: {jobs:?}"
    );
    let expected: Vec<Expect> = vms.iter().map(|vm| Expect::destroyed(vm)).collect();
    check_all(&first, &wrapper, &expected).await;
    took("two_daemons_share_the_jobs_and_run_each_once", started);
}

/// The jobs a daemon started a runner for: its job directories
/// (`<work dir>/<vm>/job-<n>/`, kept after the job).
fn job_dirs(daemon: &Daemon) -> usize {
    let jobs = daemon.work.path().join("jobs");
    std::fs::read_dir(jobs)
        .into_iter()
        .flatten()
        .flatten()
        .map(|vm| std::fs::read_dir(vm.path()).into_iter().flatten().count())
        .sum()
}
