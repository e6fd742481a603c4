//! The watchdog judges a job silent from its runner's own messages, fails it, and stops its
//! runner; a runner whose job is no longer active does not start Terraform.

use std::os::unix::process::CommandExt;
use std::time::Duration;

use bus::{RunnerMessage, RunnerReport};
use daemon::Roles;
use domain::provisioning::*;
use secrecy::ExposeSecret;
use store::{Actor, Metadata};

use crate::dispatch::events_of;
use crate::helpers::{runner_bin, terraform_wrapper, try_spawn_app, vm_spec, TestApp};

async fn ingester_with_silence(roles: Roles) -> TestApp {
    try_spawn_app(roles, |c| c.job_silence = Duration::from_secs(2))
        .await
        .unwrap()
}

/// A VM whose first job a dispatcher claimed, as the dispatcher does it.
async fn claimed_job(app: &TestApp, name: &str) -> VmId {
    let vm = VmId::new();
    let meta = Metadata::new(Actor::Admin, name);
    for command in [
        ProvisioningCommand::Request {
            at: time::OffsetDateTime::now_utc(),
            spec: vm_spec(name),
        },
        ProvisioningCommand::ClaimJob {
            job_id: JobId::FIRST,
            dispatcher: "test".into(),
        },
    ] {
        store::execute::<Provisioning>(&app.pool, vm, command, &meta)
            .await
            .unwrap();
    }
    store::liveness::touch(&app.pool, vm, JobId::FIRST)
        .await
        .unwrap();
    vm
}

#[tokio::test]
async fn a_job_whose_runner_keeps_sending_heartbeats_is_not_failed_while_nothing_is_projected() {
    // No projector: the read model never changes, the runner says it is alive.
    let app = ingester_with_silence(Roles {
        ingester: true,
        ..Roles::NONE
    })
    .await;
    let vm = claimed_job(&app, "beating").await;
    let key = app.job_key(vm, JobId::FIRST).await;
    for beat in 1..=14 {
        let message = RunnerMessage {
            vm_id: vm,
            job_id: JobId::FIRST,
            report: RunnerReport::Heartbeat { beat },
        };
        app.bus
            .publish_runner_message(&key, &message)
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert_eq!(events_of(&app, "Failed").await, vec![]);
    let (state, _) = store::load::<Provisioning>(&app.pool, &vm.to_string())
        .await
        .unwrap();
    assert!(state.lifecycle().active_job.is_some());
}

#[tokio::test]
async fn a_silent_job_is_failed_once_and_its_runner_stopped() {
    let app = ingester_with_silence(Roles {
        ingester: true,
        ..Roles::NONE
    })
    .await;
    let vm = claimed_job(&app, "silent").await;
    // A runner that says nothing, in a process group of its own as the executor makes it.
    let mut runner = std::process::Command::new("sleep")
        .arg("60")
        .process_group(0)
        .spawn()
        .unwrap();
    let name = format!("local:{}", runner.id());
    store::liveness::set_runner(&app.pool, vm, JobId::FIRST, &name)
        .await
        .unwrap();

    let deadline = tokio::time::Instant::now() + Duration::from_secs(8);
    let status = loop {
        if let Some(status) = runner.try_wait().unwrap() {
            break status;
        }
        if tokio::time::Instant::now() > deadline {
            let _ = runner.kill();
            panic!("the silent job's runner was not stopped");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(!status.success(), "killed: {status:?}");
    tokio::time::sleep(Duration::from_secs(1)).await;
    let failed = events_of(&app, "Failed").await;
    assert_eq!(failed, vec![(vm.to_string(), Some("watchdog".to_owned()))]);
}

#[tokio::test]
async fn a_runner_does_not_start_terraform_for_a_job_no_longer_active() {
    // The dispatcher role answers the runner's question.
    let app = try_spawn_app(
        Roles {
            dispatcher: true,
            ..Roles::NONE
        },
        |_| {},
    )
    .await
    .unwrap();
    let vm = claimed_job(&app, "late").await;
    let meta = Metadata::new(Actor::Watchdog, "late");
    let lost = ProvisioningCommand::FinishJob {
        job_id: JobId::FIRST,
        outcome: bus::lost_job("presumed lost".into()),
    };
    store::execute::<Provisioning>(&app.pool, vm, lost, &meta)
        .await
        .unwrap();

    let tf = tempfile::tempdir().unwrap();
    let wrapper = terraform_wrapper(tf.path(), r#"touch "$DIR/terraform-ran""#);
    let key = app.job_key(vm, JobId::FIRST).await;
    let output = tokio::process::Command::new(runner_bin())
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env(runner::env::NATS_URL, crate::database::nats_url())
        .env(runner::env::NATS_PREFIX, app.bus.subjects.prefix())
        .env(runner::env::VM_ID, vm.to_string())
        .env(runner::env::JOB_ID, "1")
        .env(runner::env::SIGNING_KEY, key.to_secret().expose_secret())
        .env(runner::env::ACTION, "apply")
        .env(runner::env::WORKDIR, tf.path().join("work"))
        .env(runner::env::TERRAFORM_BIN, &wrapper)
        .env(runner::env::BACKEND_CONN_STR, "postgres://unused")
        .output()
        .await
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    assert!(!tf.path().join("terraform-ran").exists(), "Terraform ran");
    let log = String::from_utf8_lossy(&output.stderr);
    assert!(log.contains("job skipped"), "{log}");
    assert!(!log.contains("job reported"), "{log}");
    let mut stream = app
        .bus
        .jetstream
        .get_stream(app.bus.subjects.stream("RUNNER"))
        .await
        .unwrap();
    assert_eq!(
        stream.info().await.unwrap().state.messages,
        0,
        "nothing reported"
    );
}

#[tokio::test]
async fn a_job_whose_only_messages_are_redeliveries_waiting_for_a_lost_line_is_failed_as_silent() {
    // Silence of 3 s: longer than the longest wait between two redeliveries (2 s), so
    // redeliveries counted as signs of life would keep the job alive for ever.
    let app = try_spawn_app(
        Roles {
            ingester: true,
            ..Roles::NONE
        },
        |c| c.job_silence = Duration::from_secs(3),
    )
    .await
    .unwrap();
    let vm = claimed_job(&app, "gap").await;
    let key = app.job_key(vm, JobId::FIRST).await;
    // The runner starts, prints lines 1 and 3 (line 2 never arrives) and dies.
    let reports = [
        RunnerReport::Started {
            runner: "test".into(),
        },
        RunnerReport::Log {
            line: 1,
            level: "info".into(),
            kind: "log".into(),
            message: "one".into(),
        },
        RunnerReport::Log {
            line: 3,
            level: "info".into(),
            kind: "log".into(),
            message: "three".into(),
        },
    ];
    for report in reports {
        let message = RunnerMessage {
            vm_id: vm,
            job_id: JobId::FIRST,
            report,
        };
        app.bus
            .publish_runner_message(&key, &message)
            .await
            .unwrap();
    }

    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    while events_of(&app, "Failed").await.is_empty() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let failed = events_of(&app, "Failed").await;
    assert_eq!(failed, vec![(vm.to_string(), Some("watchdog".to_owned()))]);
    let lines: i64 = store::sqlx::query_scalar(
        "SELECT count(*) FROM events WHERE aggregate_id = $1 AND event_type = 'LogLine'",
    )
    .bind(vm.to_string())
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(lines, 1, "line 3 waited for line 2, which never came");
}
