//! For random sequences of valid commands that start just before a snapshot boundary, the
//! state loaded through the snapshot equals the state replayed from every event, after each
//! command.

use domain::provisioning::*;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use store::sqlx::PgPool;

use crate::db::*;

/// What the next command does, turned into a valid command for the VM's state.
#[derive(Debug, Clone)]
enum Step {
    Lines(u32),
    Start,
    Finish { ok: bool },
    Destroy,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => (1u32..=4).prop_map(Step::Lines),
        1 => Just(Step::Start),
        1 => any::<bool>().prop_map(|ok| Step::Finish { ok }),
        1 => Just(Step::Destroy),
    ]
}

/// The command `step` stands for, or `None` when the VM's state allows none like it.
fn command(state: &Provisioning, step: &Step) -> Option<ProvisioningCommand> {
    let job = state.lifecycle().active_job;
    match (step, job) {
        (Step::Lines(n), Some(job)) => Some(ProvisioningCommand::RecordLogs {
            job_id: job.id,
            lines: lines(job.last_line + 1, job.last_line + n),
        }),
        (Step::Start, Some(job)) => Some(ProvisioningCommand::StartJob {
            job_id: job.id,
            runner: "test".into(),
        }),
        (Step::Finish { ok }, Some(job)) => Some(ProvisioningCommand::FinishJob {
            job_id: job.id,
            outcome: JobOutcome {
                exit_code: if *ok { 0 } else { 1 },
                lines: job.last_line,
                drift: vec![],
                ..success()
            },
        }),
        (Step::Destroy, _) => Some(ProvisioningCommand::RequestDestroy),
        (_, None) => None,
    }
}

/// Runs `lead` log lines (so the VM stands `lead + 3` events in), then `steps`, checking
/// snapshot against replay after every command.
async fn check(pool: &PgPool, lead: u32, steps: Vec<Step>) -> Result<(), TestCaseError> {
    let vm = VmId::new();
    run(
        pool,
        vm,
        ProvisioningCommand::Request {
            at: time::OffsetDateTime::now_utc(),
            spec: vm_spec("prop"),
        },
    )
    .await
    .unwrap();
    let start = ProvisioningCommand::StartJob {
        job_id: JobId::FIRST,
        runner: "test".into(),
    };
    run(pool, vm, start).await.unwrap();
    let logs = ProvisioningCommand::RecordLogs {
        job_id: JobId::FIRST,
        lines: lines(1, lead),
    };
    let mut state = run(pool, vm, logs).await.unwrap().state;
    for step in &steps {
        let Some(command) = command(&state, step) else {
            continue;
        };
        match run(pool, vm, command).await {
            Ok(committed) => state = committed.state,
            // A destroy asked for twice, say: refused, nothing written.
            Err(store::CommandError::Rejected(_)) => {}
            Err(e) => return Err(TestCaseError::fail(e.to_string())),
        }
        let (loaded, _) = store::load::<Provisioning>(pool, &vm.to_string())
            .await
            .unwrap();
        prop_assert_eq!(&loaded, &state, "loaded through the snapshot");
        prop_assert_eq!(&loaded, &replay(pool, vm, i64::MAX).await, "replayed");
        assert_snapshots_equal_replay(pool, vm).await;
    }
    Ok(())
}

#[test]
fn state_loaded_through_snapshots_equals_replay_around_the_boundary() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let db = runtime.block_on(TestDb::new());
    let config = Config {
        cases: 24,
        failure_persistence: None,
        ..Config::default()
    };
    // The VM stands 93..=100 events in when the random commands begin.
    let strategy = (90u32..=97, proptest::collection::vec(step(), 1..12));
    TestRunner::new(config)
        .run(&strategy, |(lead, steps)| {
            runtime.block_on(check(&db.pool, lead, steps))
        })
        .unwrap();
    drop(db);
}
