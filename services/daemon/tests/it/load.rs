//! Many users at once: 100 creates from 50 concurrent clients all answer 202 and all reach
//! `provisioned`; then 100 destroys the same, to `destroyed`.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::answers::{create, destroy};
use crate::helpers::{spawn_app, vm_request, TestApp};
use crate::wire::{Vm, VmPage};

const VMS: usize = 100;
const CLIENTS: usize = 50;

/// Waits until every VM of the list has `status`; how many had each status at the end if
/// not within `limit`.
async fn wait_all(app: &TestApp, status: &str, limit: Duration) {
    let deadline = Instant::now() + limit;
    loop {
        let vms: Vec<Vm> = app.get_json::<VmPage>("/api/v1/vms").await.items;
        let mut counts: BTreeMap<String, usize> = BTreeMap::new();
        for vm in &vms {
            *counts.entry(vm.status.clone()).or_default() += 1;
        }
        if vms.len() == VMS && counts.get(status) == Some(&VMS) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "not all {status} after {limit:?}: {counts:?}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

#[tokio::test]
async fn a_hundred_creates_and_destroys_from_fifty_clients_all_succeed() {
    let _alone = crate::helpers::MANY_RUNNERS.lock().await;
    let app = spawn_app().await;
    let started = Instant::now();
    let per_client = VMS / CLIENTS;
    let clients = (0..CLIENTS).map(|c| {
        let app = &app;
        async move {
            let mut ids = vec![];
            for n in 0..per_client {
                let body = vm_request(json!({"name": format!("load-{c}-{n}")}));
                let reply = create(app, &body, None).await;
                assert_eq!(reply.status, 202, "{}", reply.body);
                ids.push(reply.json::<Vm>().id);
            }
            ids
        }
    });
    let ids: Vec<String> = futures::future::join_all(clients)
        .await
        .into_iter()
        .flatten()
        .collect();
    println!("{VMS} creates answered in {:?}", started.elapsed());
    wait_all(&app, "provisioned", Duration::from_secs(900)).await;
    println!("{VMS} VMs provisioned after {:?}", started.elapsed());

    let destroying = Instant::now();
    let clients = ids.chunks(per_client).map(|chunk| {
        let app = &app;
        async move {
            for id in chunk {
                let reply = destroy(app, id, None).await;
                assert_eq!(reply.status, 202, "{}", reply.body);
            }
        }
    });
    futures::future::join_all(clients).await;
    println!("{VMS} destroys answered in {:?}", destroying.elapsed());
    wait_all(&app, "destroyed", Duration::from_secs(900)).await;
    println!(
        "{VMS} VMs destroyed after {:?}; {:?} in all",
        destroying.elapsed(),
        started.elapsed()
    );
    app.assert_consumers_drained().await;
}
