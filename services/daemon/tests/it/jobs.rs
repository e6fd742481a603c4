//! Job control end to end on the `local` provider with real Terraform: the queue per VM,
//! cancel and force-cancel, deadlines, retry and refresh. A wrapper in front of Terraform
//! (`TERRAFORM_BIN`) stands for a slow Terraform: while a file `slow-<kind>` exists it waits
//! before running the real binary, and it records the interrupts it gets as Terraform
//! would handle them (stop, exit 130), or ignores them (`ignore-int`, a Terraform that does
//! not stop). A refresh is `plan -refresh-only` (recorded as `refresh`), then `show` and
//! `apply` of the saved plan, which pass through unrecorded.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::json;

use crate::helpers::{spawn_app_with, terraform_wrapper, try_spawn_app, TestApp};
use crate::wire::{JobDetail, Problem, Vm};

const WRAPPER: &str = r#"
kind="$1"
case " $* " in
  *" -refresh-only "*) kind=refresh ;;
  *".tfplan "*) kind=saved-plan ;;
esac
case "$kind" in
  apply|destroy|refresh)
    VM="${TF_WORKSPACE#vm-}"
    echo "$kind $VM" >> "$DIR/invocations"
    echo "$$" > "$DIR/pid-$kind-$VM"
    export TF_VAR_address_epoch="$(cat "$DIR/epoch" 2>/dev/null || echo 0)"
    if [ -e "$DIR/fail-$kind" ]; then echo "Error: the cloud refused (test)" >&2; exit 1; fi
    if [ -e "$DIR/ignore-int" ]; then
      trap '' INT
    else
      trap 'echo "$kind $VM" >> "$DIR/interrupted"; exit 130' INT
    fi
    while [ -e "$DIR/slow-$kind" ]; do sleep 0.1; done
    ;;
esac
"#;

/// A daemon whose Terraform is the wrapper, with a cool-off of 2 s and `deadline_create`.
struct Jobs {
    app: TestApp,
    dir: tempfile::TempDir,
}

impl Jobs {
    async fn start(deadline_create: Duration) -> Jobs {
        let dir = tempfile::tempdir().unwrap();
        let wrapper = terraform_wrapper(dir.path(), WRAPPER);
        let app = try_spawn_app(daemon::Roles::ALL, |config| {
            config.terraform_bin = wrapper;
            config.job_limits.create = deadline_create;
            config.job_limits.cancel_cooloff = Duration::from_secs(2);
        })
        .await
        .expect("the application starts");
        Jobs { app, dir }
    }

    fn file(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn switch(&self, name: &str, on: bool) {
        match on {
            true => std::fs::write(self.file(name), "").unwrap(),
            false => std::fs::remove_file(self.file(name)).unwrap(),
        }
    }

    fn lines(&self, name: &str) -> Vec<String> {
        read_lines(&self.file(name))
    }

    async fn create(&self) -> String {
        self.app.create_ok(json!({})).await
    }

    /// Waits until the wrapper runs `kind` for `vm` (Terraform started).
    async fn wait_started(&self, kind: &str, vm: &str) {
        let want = format!("{kind} {vm}");
        wait(
            || self.lines("invocations").contains(&want),
            "terraform to start",
        )
        .await;
    }

    async fn post(&self, path: &str, status: u16) -> Vm {
        self.app.post_json(path, &json!({}), status).await
    }

    async fn refused(&self, path: &str, status: u16) -> Problem {
        self.app.post_json(path, &json!({}), status).await
    }

    async fn job(&self, vm: &str, job: u32) -> JobDetail {
        self.app
            .get_json(&format!("/api/v1/vms/{vm}/jobs/{job}"))
            .await
    }

    async fn wait_job(&self, vm: &str, job: u32, state: &str) -> JobDetail {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        loop {
            let response = self
                .app
                .get(&format!("/api/v1/vms/{vm}/jobs/{job}"))
                .send()
                .await
                .unwrap();
            if response.status() == 200 {
                let detail: JobDetail = response.json().await.unwrap();
                if detail.state == state {
                    return detail;
                }
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "job {job} never became {state}: {detail:?}"
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

fn read_lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

async fn wait(done: impl Fn() -> bool, what: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "waited 60 s for {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn alive(pid: &str) -> bool {
    Path::new(&format!("/proc/{}", pid.trim())).exists()
}

#[tokio::test]
async fn three_requests_run_one_at_a_time_in_the_order_they_were_asked() {
    let jobs = Jobs::start(Duration::from_secs(600)).await;
    jobs.switch("slow-apply", true);
    let vm = jobs.create().await;
    jobs.wait_started("apply", &vm).await;

    let refresh = jobs.post(&format!("/api/v1/vms/{vm}/refresh"), 202).await;
    let destroy: Vm = jobs
        .app
        .delete_json(&format!("/api/v1/vms/{vm}"), 202)
        .await;
    let queue = |vm: &Vm| {
        vm.queue
            .iter()
            .map(|j| (j.id, j.action.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(queue(&refresh), [(2, "refresh".to_owned())]);
    assert_eq!(
        queue(&destroy),
        [(2, "refresh".to_owned()), (3, "destroy".to_owned())]
    );
    assert_eq!(destroy.status, "destroy_requested");
    assert_eq!(
        destroy.job.as_ref().map(|j| j.state.as_str()),
        Some("running")
    );
    // The same destroy asked again while it waits is the same request.
    let same: Vm = jobs
        .app
        .delete_json(&format!("/api/v1/vms/{vm}"), 202)
        .await;
    assert_eq!(queue(&same), queue(&destroy));

    jobs.switch("slow-apply", false);
    jobs.app.wait_for_status(&vm, "destroyed").await;

    let kinds: Vec<String> = jobs.lines("invocations");
    assert_eq!(
        kinds,
        [
            format!("apply {vm}"),
            format!("refresh {vm}"),
            format!("destroy {vm}")
        ]
    );
    let all: Vec<JobDetail> = jobs.app.get_json(&format!("/api/v1/vms/{vm}/jobs")).await;
    let summary: Vec<(u32, &str, &str)> = all
        .iter()
        .map(|j| (j.id, j.action.as_str(), j.state.as_str()))
        .collect();
    assert_eq!(
        summary,
        [
            (1, "create", "succeeded"),
            (2, "refresh", "succeeded"),
            (3, "destroy", "succeeded")
        ]
    );
    for job in &all {
        assert_eq!(job.requested_by.as_deref(), Some("admin"), "{job:?}");
        assert!(
            job.started_at.is_some() && job.ended_at.is_some(),
            "{job:?}"
        );
        assert_eq!(job.exit_code, Some(0));
    }
    let logs: Vec<crate::wire::LogLine> = jobs
        .app
        .get_json(&format!("/api/v1/vms/{vm}/jobs/2/logs"))
        .await;
    assert!(!logs.is_empty());
    assert!(logs.iter().all(|l| l.job_id == 2), "{logs:?}");
    // Each job started after the one before it ended.
    for pair in all.windows(2) {
        let ended = time_of(pair[0].ended_at.as_deref());
        let started = time_of(pair[1].started_at.as_deref());
        assert!(started >= ended, "{pair:?}");
    }
    jobs.app.assert_consumers_drained().await;
}

fn time_of(text: Option<&str>) -> time::OffsetDateTime {
    time::OffsetDateTime::parse(
        text.unwrap(),
        &time::format_description::well_known::Rfc3339,
    )
    .unwrap()
}

#[tokio::test]
async fn a_job_waiting_behind_another_is_cancelled_at_once_and_never_runs() {
    let jobs = Jobs::start(Duration::from_secs(600)).await;
    jobs.switch("slow-apply", true);
    let vm = jobs.create().await;
    jobs.wait_started("apply", &vm).await;
    let queued = jobs.post(&format!("/api/v1/vms/{vm}/refresh"), 202).await;
    assert_eq!(queued.queue.len(), 1);

    let after = jobs
        .post(&format!("/api/v1/vms/{vm}/jobs/2/cancel"), 202)
        .await;

    assert_eq!(after.queue, []);
    let cancelled = jobs.wait_job(&vm, 2, "cancelled").await;
    assert_eq!(cancelled.started_at, None);
    assert_eq!(cancelled.reason.as_deref(), Some("cancelled by admin"));
    jobs.switch("slow-apply", false);
    jobs.app.wait_for_status(&vm, "provisioned").await;
    let _: Problem = jobs
        .refused(&format!("/api/v1/vms/{vm}/jobs/2/cancel"), 409)
        .await;
    let _: Problem = jobs
        .refused(&format!("/api/v1/vms/{vm}/jobs/9/cancel"), 404)
        .await;
    assert!(!jobs
        .lines("invocations")
        .iter()
        .any(|l| l.starts_with("refresh")));
}

#[tokio::test]
async fn a_running_create_cancelled_gets_one_interrupt_and_the_destroy_behind_it_runs() {
    let jobs = Jobs::start(Duration::from_secs(600)).await;
    jobs.switch("slow-apply", true);
    let vm = jobs.create().await;
    jobs.wait_started("apply", &vm).await;
    let _: Vm = jobs
        .app
        .delete_json(&format!("/api/v1/vms/{vm}"), 202)
        .await;

    let asked = jobs
        .post(&format!("/api/v1/vms/{vm}/jobs/1/cancel"), 202)
        .await;

    assert_eq!(asked.job.as_ref().map(|j| j.cancel_requested), Some(true));
    let cancelled = jobs.wait_job(&vm, 1, "cancelled").await;
    assert_eq!(cancelled.exit_code, Some(130), "{cancelled:?}");
    assert!(cancelled.cancel_requested_at.is_some());
    assert_eq!(
        jobs.lines("interrupted"),
        [format!("apply {vm}")],
        "Terraform got exactly one interrupt"
    );
    // Terraform stopped cleanly and left no lock: the destroy behind it runs.
    jobs.app.wait_for_status(&vm, "destroyed").await;
    let destroy = jobs.job(&vm, 2).await;
    assert_eq!(destroy.state, "succeeded");
    let _: Problem = jobs
        .refused(&format!("/api/v1/vms/{vm}/jobs/1/cancel"), 409)
        .await;
    jobs.app.assert_consumers_drained().await;
}

#[tokio::test]
async fn force_cancel_waits_for_a_cancel_and_its_cool_off_then_kills_the_runner() {
    let jobs = Jobs::start(Duration::from_secs(600)).await;
    jobs.switch("slow-apply", true);
    jobs.switch("ignore-int", true);
    let vm = jobs.create().await;
    jobs.wait_started("apply", &vm).await;
    let force = format!("/api/v1/vms/{vm}/jobs/1/force-cancel");

    let refused: Problem = jobs.refused(&force, 409).await;
    assert!(refused.detail.contains("cancel it first"), "{refused:?}");
    jobs.post(&format!("/api/v1/vms/{vm}/jobs/1/cancel"), 202)
        .await;
    let early: Problem = jobs.refused(&force, 409).await;
    assert!(early.detail.contains("after 2 s"), "{early:?}");
    tokio::time::sleep(Duration::from_millis(2100)).await;
    let forced = jobs.post(&force, 202).await;

    assert_eq!(forced.job, None);
    assert_eq!(forced.status, "failed");
    let job = jobs.wait_job(&vm, 1, "cancelled").await;
    assert!(
        job.reason.as_deref().unwrap().contains("forced off"),
        "{job:?}"
    );
    let pid = std::fs::read_to_string(jobs.file(&format!("pid-apply-{vm}"))).unwrap();
    wait(|| !alive(&pid), "the ignoring Terraform to be killed").await;
    // The VM can be destroyed: the killed run held no lock that stays.
    jobs.switch("slow-apply", false);
    let _: Vm = jobs
        .app
        .delete_json(&format!("/api/v1/vms/{vm}"), 202)
        .await;
    jobs.app.wait_for_status(&vm, "destroyed").await;
}

#[tokio::test]
async fn a_create_past_its_deadline_is_interrupted_and_fails_with_the_reason() {
    let jobs = Jobs::start(Duration::from_secs(3)).await;
    jobs.switch("slow-apply", true);
    let vm = jobs.create().await;

    let failed = jobs.wait_job(&vm, 1, "failed").await;

    let reason = failed.reason.unwrap();
    assert_eq!(reason, "the create job ran past its deadline of 3 s");
    assert_eq!(jobs.lines("interrupted"), [format!("apply {vm}")]);
    let vm_now = jobs.app.wait_for_status(&vm, "failed").await;
    assert_eq!(vm_now.last_error.as_deref(), Some(reason.as_str()));
}

#[tokio::test]
async fn a_failed_create_is_retried_and_nothing_else_can_be() {
    let jobs = Jobs::start(Duration::from_secs(600)).await;
    jobs.switch("fail-apply", true);
    let vm = jobs.create().await;
    jobs.app.wait_for_status(&vm, "failed").await;
    jobs.switch("fail-apply", false);

    let retried = jobs.post(&format!("/api/v1/vms/{vm}/retry"), 202).await;

    assert_eq!(retried.status, "requested");
    assert_eq!(
        retried.job.as_ref().map(|j| (j.id, j.action.as_str())),
        Some((2, "create"))
    );
    let vm_now = jobs.app.wait_for_status(&vm, "provisioned").await;
    assert!(vm_now.ip.is_some());
    let failed = jobs.job(&vm, 1).await;
    assert_eq!(
        (failed.state.as_str(), failed.exit_code),
        ("failed", Some(1))
    );
    let problem: Problem = jobs.refused(&format!("/api/v1/vms/{vm}/retry"), 409).await;
    assert!(problem.detail.contains("nothing failed"), "{problem:?}");
}

#[tokio::test]
async fn a_refresh_keeps_the_vm_provisioned_and_follows_its_new_address() {
    let jobs = Jobs::start(Duration::from_secs(600)).await;
    let vm = jobs.create().await;
    let before = jobs.app.wait_for_status(&vm, "provisioned").await;
    std::fs::write(jobs.file("epoch"), "7").unwrap();
    jobs.switch("slow-refresh", true);

    let asked = jobs.post(&format!("/api/v1/vms/{vm}/refresh"), 202).await;

    assert_eq!(asked.status, "provisioned");
    jobs.wait_started("refresh", &vm).await;
    let running = jobs.app.vm(&vm).await;
    assert_eq!(running.status, "provisioned", "{running:?}");
    assert_eq!(
        running.job.as_ref().map(|j| j.state.as_str()),
        Some("running")
    );
    jobs.switch("slow-refresh", false);
    jobs.wait_job(&vm, 2, "succeeded").await;
    let after = jobs.app.vm(&vm).await;
    let state = jobs.app.terraform_state(&vm).await;
    assert_ne!(after.ip, before.ip);
    assert_eq!(
        after.ip.as_deref(),
        state["outputs"]["vm_ip"]["value"].as_str()
    );
    let changed: Vec<_> = jobs
        .app
        .events(&vm)
        .await
        .into_iter()
        .filter(|e| e.kind == "IpChanged")
        .collect();
    assert_eq!(changed.len(), 1);
    assert_eq!(changed[0].data["vm_ip"], after.ip.clone().unwrap());

    let _: Vm = jobs
        .app
        .delete_json(&format!("/api/v1/vms/{vm}"), 202)
        .await;
    let _: Problem = jobs
        .refused(&format!("/api/v1/vms/{vm}/refresh"), 409)
        .await;
}

#[tokio::test]
async fn jobs_of_an_unknown_vm_are_not_found() {
    let app = spawn_app_with(daemon::Roles::ALL).await;
    let vm = uuid::Uuid::new_v4();
    for path in [
        format!("/api/v1/vms/{vm}/jobs"),
        format!("/api/v1/vms/{vm}/jobs/1"),
        format!("/api/v1/vms/{vm}/jobs/1/logs"),
    ] {
        let response = app.get(&path).send().await.unwrap();
        assert_eq!(response.status(), 404, "{path}");
    }
    let _: Problem = app
        .post_json(&format!("/api/v1/vms/{vm}/retry"), &json!({}), 404)
        .await;
    let _: Problem = app
        .post_json(&format!("/api/v1/vms/{vm}/jobs/x/cancel"), &json!({}), 404)
        .await;
}
