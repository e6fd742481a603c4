use daemon::Roles;
use domain::provisioning::*;
use store::{Actor, Metadata};

use crate::helpers::{spawn_app_with, vm_spec};

fn lines(from: u32, to: u32) -> Vec<LogLineIn> {
    (from..=to)
        .map(|n| LogLineIn {
            line: n,
            level: "info".into(),
            kind: "log".into(),
            message: format!("line {n}"),
        })
        .collect()
}

#[tokio::test]
async fn a_vm_with_hundreds_of_log_lines_loads_the_same_from_its_snapshots() {
    let app = spawn_app_with(Roles::NONE).await;
    let vm = VmId::new();
    let meta = Metadata::new(Actor::Admin, "snapshots");
    let job = JobId::FIRST;
    let run = |command| store::execute::<Provisioning>(&app.pool, vm, command, &meta);
    run(ProvisioningCommand::Request {
        at: time::OffsetDateTime::now_utc(),
        spec: vm_spec("big"),
    })
    .await
    .unwrap();
    run(ProvisioningCommand::StartJob {
        job_id: job,
        runner: "test".into(),
    })
    .await
    .unwrap();
    for (from, to) in [(1, 120), (121, 250), (251, 330)] {
        run(ProvisioningCommand::RecordLogs {
            job_id: job,
            lines: lines(from, to),
        })
        .await
        .unwrap();
    }
    let snapshots: i64 = store::sqlx::query_scalar("SELECT count(*) FROM snapshots")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert!(snapshots > 0, "the store took a snapshot");

    // Redelivered lines add nothing: the snapshot remembers the last line.
    run(ProvisioningCommand::RecordLogs {
        job_id: job,
        lines: lines(200, 335),
    })
    .await
    .unwrap();
    // A destroy asked for during the job waits behind it: the snapshot remembers the queue.
    run(ProvisioningCommand::RequestDestroy).await.unwrap();
    let outcome = JobOutcome {
        exit_code: 0,
        outputs: [("vm_ip".to_owned(), serde_json::json!("10.77.0.5"))].into(),
        diagnostics: vec![],
        lines: 0,
        drift: vec![],
    };
    run(ProvisioningCommand::FinishJob {
        job_id: job,
        outcome,
    })
    .await
    .unwrap();

    let types: Vec<String> = store::sqlx::query_scalar(
        "SELECT event_type FROM events WHERE aggregate_id = $1 ORDER BY sequence",
    )
    .bind(vm.to_string())
    .fetch_all(&app.pool)
    .await
    .unwrap();
    let log_lines = types.iter().filter(|t| *t == "LogLine").count();
    assert_eq!(log_lines, 335, "lines 1..=335, each once");
    assert_eq!(
        types[types.len() - 4..],
        ["DestroyRequested", "JobRequested", "Applied", "JobQueued"]
    );
}
