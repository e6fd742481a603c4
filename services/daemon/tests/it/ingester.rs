use std::time::Duration;

use bus::{Publisher, RunnerMessage, RunnerReport};
use daemon::Roles;
use domain::provisioning::*;
use store::{Actor, Metadata};

use crate::helpers::{spawn_app_with, vm_spec, TestApp};

async fn send(app: &TestApp, vm: VmId, report: RunnerReport) {
    let message = RunnerMessage {
        vm_id: vm,
        job_id: JobId::FIRST,
        report,
    };
    let key = app.job_key(vm, JobId::FIRST).await;
    let mut publisher = Publisher::new(app.bus.jetstream.clone(), 1);
    publisher
        .publish_runner(&app.bus.subjects, &key, &message)
        .await
        .unwrap();
    publisher.flush().await.unwrap();
}

fn log(line: u32) -> RunnerReport {
    RunnerReport::Log {
        line,
        level: "info".into(),
        kind: "log".into(),
        message: format!("line {line}"),
    }
}

#[tokio::test]
async fn lines_that_arrive_late_are_recorded_in_order_before_the_result() {
    let app = spawn_app_with(Roles {
        ingester: true,
        ..Roles::NONE
    })
    .await;
    let vm = VmId::new();
    let meta = Metadata::new(Actor::Admin, "late");
    store::execute::<Provisioning>(
        &app.pool,
        vm,
        ProvisioningCommand::Request {
            at: time::OffsetDateTime::now_utc(),
            spec: vm_spec("late-lines"),
        },
        &meta,
    )
    .await
    .unwrap();

    send(
        &app,
        vm,
        RunnerReport::Started {
            runner: "test".into(),
        },
    )
    .await;
    for line in [1, 2, 4, 5] {
        send(&app, vm, log(line)).await;
    }
    let result = RunnerReport::Result {
        exit_code: 0,
        outputs: [("vm_ip".to_owned(), serde_json::json!("10.77.0.8"))].into(),
        diagnostics: vec![],
        lines: 5,
        drift: vec![],
    };
    send(&app, vm, result).await;
    tokio::time::sleep(Duration::from_millis(700)).await;
    send(&app, vm, log(3)).await; // line 3 was held up somewhere

    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let events = loop {
        let rows: Vec<(String, Option<i64>)> = store::sqlx::query_as(
            "SELECT event_type, (payload::jsonb->'data'->>'line')::bigint FROM events
             WHERE aggregate_id = $1 ORDER BY sequence",
        )
        .bind(vm.to_string())
        .fetch_all(&app.pool)
        .await
        .unwrap();
        if rows.last().is_some_and(|(t, _)| t == "Applied") {
            break rows;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "never applied: {rows:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let lines: Vec<i64> = events.iter().filter_map(|(_, line)| *line).collect();
    assert_eq!(
        lines,
        [1, 2, 3, 4, 5],
        "every line, in order, before the result"
    );
}
