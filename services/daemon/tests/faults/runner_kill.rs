//! A runner killed (SIGKILL) in the middle of an apply, a runner that hangs (stopped with
//! SIGSTOP: no line, no heartbeat), and a Terraform that hangs under a live runner; each
//! job ends `failed` with a reason, and a retry then succeeds.

use std::time::{Duration, Instant};

use crate::checks::{check_all, took, Expect, Markers};
use crate::daemon::{signal, Daemon, Setup};
use crate::wrapper::Wrapper;

/// The silence limit of these tests: above the runners' heartbeat (10 s), so that healthy
/// runs are never failed.
const SILENCE_SECS: u64 = 12;

async fn start(wrapper: &Wrapper) -> Daemon {
    Daemon::start(setup(wrapper)).await
}

fn setup(wrapper: &Wrapper) -> Setup {
    Setup {
        terraform_bin: wrapper.path.clone(),
        ..Setup::default()
    }
    .env("PROVISIONING_JOB_SILENCE_SECS", SILENCE_SECS)
}

/// Retries the VM's failed create and waits until it is provisioned: Terraform ran twice.
async fn retried(daemon: &Daemon, wrapper: &Wrapper, vm: &str) {
    daemon.retry_vm(vm).await;
    daemon
        .wait_for_status(vm, "provisioned", Duration::from_secs(60))
        .await;
    assert_eq!(
        wrapper.count(vm, "apply"),
        2,
        "the retry ran Terraform once more"
    );
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
    retried(&daemon, &wrapper, &vm).await;
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
    wrapper.release();
    retried(&daemon, &wrapper, &vm).await;
    took("hung_runner", started);
}

/// A hung Terraform under a live runner: the runner's heartbeats are what the silence
/// limit judges, so the job's deadline ends it. The hung Terraform ignores the deadline's
/// interrupt (a shell waiting on `sleep`), so after the cool-off the job is forced off, its
/// runner and Terraform killed, and it fails with the reason.
#[tokio::test]
async fn a_hung_terraform_under_a_live_runner_fails_at_its_deadline() {
    const DEADLINE_SECS: u64 = 20;
    const COOLOFF_SECS: u64 = 3;
    let started = Instant::now();
    let wrapper = Wrapper::new();
    wrapper.hang(true);
    let daemon = Daemon::start(
        setup(&wrapper)
            .env("PROVISIONING_DEADLINE_CREATE", DEADLINE_SECS)
            .env("PROVISIONING_CANCEL_COOLOFF", COOLOFF_SECS),
    )
    .await;
    let vm = daemon.create_vm("hung-terraform").await;
    let terraform = wrapper.wait_hung(&vm, Duration::from_secs(60)).await;
    let hung = Instant::now();
    tokio::time::sleep(Duration::from_secs(SILENCE_SECS + 2)).await;
    assert_eq!(
        daemon.vm(&vm).await.status,
        "provisioning",
        "heartbeats keep it from the silence limit"
    );
    let vm_out = daemon
        .wait_for_status(&vm, "failed", Duration::from_secs(DEADLINE_SECS * 2))
        .await;
    let reason = vm_out.last_error.unwrap_or_default();
    eprintln!(
        "failed {:.1} s after Terraform hung (deadline {DEADLINE_SECS} s, cool-off {COOLOFF_SECS} s): {reason}",
        hung.elapsed().as_secs_f64()
    );
    assert!(reason.contains("ran past its deadline"), "{reason}");
    assert!(reason.contains("forced off"), "{reason}");
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::path::Path::new(&format!("/proc/{terraform}")).exists() && !zombie(terraform) {
        assert!(
            Instant::now() < deadline,
            "the hung Terraform was never killed"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    check_all(&daemon, &wrapper, &[failed_once(&vm)]).await;
    wrapper.hang(false);
    retried(&daemon, &wrapper, &vm).await;
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
