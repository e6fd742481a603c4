use std::collections::BTreeMap;
use std::path::Path;

use serde_json::json;

use crate::helpers::{spawn_app, vm_request};
use crate::wire::Vm;

/// The job directories a replica's dispatcher made: `<work>/<vm>/job-<n>`.
fn dispatched(work: &Path) -> Vec<String> {
    let mut jobs = vec![];
    for vm in std::fs::read_dir(work).unwrap().flatten() {
        for job in std::fs::read_dir(vm.path()).unwrap().flatten() {
            jobs.push(format!(
                "{}/{}",
                vm.file_name().to_string_lossy(),
                job.file_name().to_string_lossy()
            ));
        }
    }
    jobs
}

#[tokio::test]
async fn two_replicas_of_every_role_run_each_job_once() {
    let first = spawn_app().await;
    let second = first.spawn_replica().await;
    let replicas = [&first, &second];

    let mut ids = vec![];
    for n in 0..6 {
        let api = replicas[n % 2];
        let body = vm_request(json!({"name": format!("vm-{n}")}));
        let vm: Vm = api.post_json("/api/v1/vms", &body, 202).await;
        ids.push(vm.id);
    }
    for (n, id) in ids.iter().enumerate() {
        replicas[(n + 1) % 2]
            .wait_for_status(id, "provisioned")
            .await;
        let _: Vm = replicas[n % 2]
            .delete_json(&format!("/api/v1/vms/{id}"), 202)
            .await;
    }
    for (n, id) in ids.iter().enumerate() {
        replicas[n % 2].wait_for_status(id, "destroyed").await;
    }

    let mut runs: BTreeMap<String, usize> = BTreeMap::new();
    for app in replicas {
        for job in dispatched(app.work.path()) {
            *runs.entry(job).or_default() += 1;
        }
    }
    assert_eq!(
        runs.len(),
        ids.len() * 2,
        "an apply and a destroy per VM: {runs:?}"
    );
    assert!(
        runs.values().all(|n| *n == 1),
        "each job ran once: {runs:?}"
    );
    let locks: i64 = store::sqlx::query_scalar(
        "SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database
         WHERE l.locktype = 'advisory' AND l.granted AND d.datname = current_database()",
    )
    .fetch_one(&first.pool)
    .await
    .unwrap();
    assert_eq!(
        locks, 6,
        "one relay, one projector, one watchdog, one lifecycle sweep, one gauges publisher, \
         one cluster coordinator hold their leases"
    );
    first.assert_consumers_drained().await;
}
