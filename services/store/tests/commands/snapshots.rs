//! Commands whose events land on a snapshot boundary: the snapshot holds the state after
//! all of them, each applied once.

use domain::provisioning::*;

use crate::db::*;

/// Request (1-2), StartJob (3) and log lines 1..=`logs` (4..).
async fn started_with_lines(db: &TestDb, vm: VmId, logs: u32) {
    let job = JobId::FIRST;
    run(
        &db.pool,
        vm,
        ProvisioningCommand::Request {
            at: time::OffsetDateTime::now_utc(),
            spec: vm_spec("edge"),
        },
    )
    .await
    .unwrap();
    let start = ProvisioningCommand::StartJob {
        job_id: job,
        runner: "test".into(),
    };
    run(&db.pool, vm, start).await.unwrap();
    let logs = ProvisioningCommand::RecordLogs {
        job_id: job,
        lines: lines(1, logs),
    };
    run(&db.pool, vm, logs).await.unwrap();
}

#[tokio::test]
async fn a_destroy_queued_by_a_job_that_ends_on_the_snapshot_boundary_can_run() {
    let db = TestDb::new().await;
    let vm = VmId::new();
    started_with_lines(&db, vm, 94).await; // sequences 1..=97
    let destroy = run(&db.pool, vm, ProvisioningCommand::RequestDestroy)
        .await
        .unwrap();
    assert_eq!(
        destroy.sequence, 99,
        "a destroy waits behind the running job (DestroyRequested, JobRequested)"
    );

    let finish = ProvisioningCommand::FinishJob {
        job_id: JobId::FIRST,
        outcome: success(),
    };
    let finished = run(&db.pool, vm, finish).await.unwrap();
    let sequences: Vec<u64> = finished.events.iter().map(|e| e.sequence).collect();
    assert_eq!(
        sequences,
        [100, 101],
        "Applied, then the destroy job queued"
    );
    assert!(finished.events[0].position < finished.events[1].position);
    let rows = assert_snapshots_equal_replay(&db.pool, vm).await;
    assert_eq!(
        rows[0].last_sequence, 101,
        "the snapshot follows the whole command"
    );

    let destroy_job = JobId::FIRST.next();
    let start = ProvisioningCommand::StartJob {
        job_id: destroy_job,
        runner: "test".into(),
    };
    let started = run(&db.pool, vm, start).await.unwrap();
    assert_eq!(started.state.status(), VmStatus::Destroying);
}

#[tokio::test]
async fn a_destroy_requested_on_the_snapshot_boundary_queues_one_destroy_job() {
    let db = TestDb::new().await;
    let vm = VmId::new();
    started_with_lines(&db, vm, 95).await; // sequences 1..=98
    let finish = ProvisioningCommand::FinishJob {
        job_id: JobId::FIRST,
        outcome: success(),
    };
    let applied = run(&db.pool, vm, finish).await.unwrap();
    assert_eq!(applied.sequence, 99);

    let destroy = run(&db.pool, vm, ProvisioningCommand::RequestDestroy)
        .await
        .unwrap();
    let names: Vec<&str> = destroy.events.iter().map(|e| e.event.name()).collect();
    assert_eq!(names, ["DestroyRequested", "JobQueued"]);
    assert_snapshots_equal_replay(&db.pool, vm).await;

    let destroy_job = JobId::FIRST.next();
    let start = ProvisioningCommand::StartJob {
        job_id: destroy_job,
        runner: "test".into(),
    };
    run(&db.pool, vm, start).await.unwrap();
    let finish = ProvisioningCommand::FinishJob {
        job_id: destroy_job,
        outcome: success(),
    };
    let destroyed = run(&db.pool, vm, finish).await.unwrap();
    let names: Vec<&str> = destroyed.events.iter().map(|e| e.event.name()).collect();
    assert_eq!(names, ["Destroyed"], "no second destroy job");
    assert_eq!(destroyed.state.status(), VmStatus::Destroyed);
}

#[tokio::test]
async fn writers_racing_on_one_vm_across_boundaries_leave_one_snapshot_equal_to_replay() {
    let db = TestDb::new().await;
    let vm = VmId::new();
    started_with_lines(&db, vm, 90).await; // sequences 1..=93
    let mut writers = tokio::task::JoinSet::new();
    for _ in 0..3 {
        let pool = db.pool.clone();
        writers.spawn(async move {
            // Every writer sends every batch: each line is recorded once, by whoever wins.
            for from in (91..=300).step_by(7) {
                let command = ProvisioningCommand::RecordLogs {
                    job_id: JobId::FIRST,
                    lines: lines(from, from + 6),
                };
                run(&pool, vm, command).await.unwrap();
            }
        });
    }
    while let Some(done) = writers.join_next().await {
        done.unwrap();
    }
    let rows = assert_snapshots_equal_replay(&db.pool, vm).await;
    assert_eq!(rows.len(), 1);
    assert!(rows[0].last_sequence >= 300, "{}", rows[0].last_sequence);
    let recorded: i64 = store::sqlx::query_scalar(
        "SELECT count(*) FROM events WHERE aggregate_id = $1 AND event_type = 'LogLine'",
    )
    .bind(vm.to_string())
    .fetch_one(&db.pool)
    .await
    .unwrap();
    assert_eq!(recorded, 300, "lines 1..=300, each once");
}
