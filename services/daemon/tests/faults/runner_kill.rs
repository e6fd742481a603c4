//! A runner killed (SIGKILL) in the middle of an apply, a runner that hangs (stopped with
//! SIGSTOP: no line, no heartbeat), and a Terraform that hangs under a live runner.

use std::time::{Duration, Instant};

use crate::checks::{check_all, took, Expect, Markers};
use crate::daemon::{signal, Daemon, Setup};
use crate::wrapper::Wrapper;

/// The silence limit of these tests: above the runners' heartbeat (10 s), so that healthy
/// runs are never failed.
const SILENCE_SECS: u64 = 12;

async fn start(wrapper: &Wrapper) -> Daemon {
    Daemon::start(
        Setup {
            terraform_bin: wrapper.path.clone(),
            ..Setup::default()
        }
        .env("PROVISIONING_JOB_SILENCE_SECS", SILENCE_SECS),
    )
    .await
}

fn failed_once(vm: &str) -> Expect {
    Expect {
        status: "failed",
        markers: Markers::Prefix,
        ..Expect::provisioned(vm)
    }
}

#[tokio::test]
async fn a_runner_killed_mid_apply_fails_its_job_with_a_reason_at_once() {
    let started = Instant::now();
    let wrapper = Wrapper::new();
    let daemon = start(&wrapper).await;
    wrapper.hold();
    let vm = daemon.create_vm("killed-runner").await;
    wrapper.wait_held(&vm, Duration::from_secs(60)).await;
    let run = wrapper.invocations().last().unwrap().clone();
    let killed = Instant::now();
    signal("KILL", run.runner);
    // Terraform, left without its runner, dies of SIGPIPE at its next line.
    wrapper.release();
    let vm_out = daemon
        .wait_for_status(&vm, "failed", Duration::from_secs(30))
        .await;
    let reason = vm_out.last_error.unwrap_or_default();
    eprintln!(
        "failed {:.1} s after the runner was killed: {reason}",
        killed.elapsed().as_secs_f64()
    );
    assert!(reason.contains("runner"), "{reason}");
    assert!(killed.elapsed() < Duration::from_secs(10));
    check_all(&daemon, &wrapper, &[failed_once(&vm)]).await;
    took("runner_killed_mid_apply", started);
}

#[tokio::test]
async fn a_hung_runner_fails_its_job_with_a_reason_within_the_silence_limit() {
    let started = Instant::now();
    let wrapper = Wrapper::new();
    let daemon = start(&wrapper).await;
    wrapper.hold();
    let vm = daemon.create_vm("hung-runner").await;
    let terraform = wrapper.wait_held(&vm, Duration::from_secs(60)).await;
    let run = wrapper.invocations().last().unwrap().clone();
    // The runner stops dead: no line, no heartbeat, no exit.
    signal("STOP", run.runner);
    let hung = Instant::now();
    let vm_out = daemon
        .wait_for_status(&vm, "failed", Duration::from_secs(SILENCE_SECS * 3))
        .await;
    let reason = vm_out.last_error.unwrap_or_default();
    eprintln!(
        "failed {:.1} s after the runner hung (silence limit {SILENCE_SECS} s): {reason}",
        hung.elapsed().as_secs_f64()
    );
    assert!(!reason.is_empty());
    // The watchdog stopped the runner's process group, the stopped runner included.
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::path::Path::new(&format!("/proc/{}", run.runner)).exists() && !zombie(run.runner) {
        assert!(
            Instant::now() < deadline,
            "the hung runner was never stopped"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    signal("KILL", -terraform);
    check_all(&daemon, &wrapper, &[failed_once(&vm)]).await;
    took("hung_runner", started);
}

/// A hung Terraform under a live runner keeps its job going: the runner's heartbeats are
/// what the watchdog judges, so nothing fails the job today (a job deadline is the
/// job-control issue's). The job ends when its runner is stopped.
#[tokio::test]
async fn a_hung_terraform_under_a_live_runner_is_not_failed_by_the_silence_limit() {
    let started = Instant::now();
    let wrapper = Wrapper::new();
    wrapper.hang(true);
    let daemon = start(&wrapper).await;
    let vm = daemon.create_vm("hung-terraform").await;
    let terraform = wrapper.wait_hung(&vm, Duration::from_secs(60)).await;
    tokio::time::sleep(Duration::from_secs(SILENCE_SECS * 2)).await;
    assert_eq!(daemon.vm(&vm).await.status, "provisioning");
    // Stopped from outside, the job fails with a reason.
    let run = wrapper.invocations().last().unwrap().clone();
    signal("KILL", -terraform);
    signal("KILL", run.runner);
    let vm_out = daemon
        .wait_for_status(&vm, "failed", Duration::from_secs(30))
        .await;
    assert!(vm_out.last_error.is_some_and(|e| !e.is_empty()));
    check_all(&daemon, &wrapper, &[failed_once(&vm)]).await;
    took("hung_terraform_under_a_live_runner", started);
}

fn zombie(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            s.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
        .unwrap_or(true)
}
