//! What NAIC's frontend sends and shows on `local`: VM names as it allows them, with the host
//! name derived for the templates and cloud-init; and the simulated boot, which calls a
//! `local` VM's callback URLs the way cloud-init would, so the VM reaches `running`. The
//! shared test configuration has the simulation off (the callback tests call them by hand).

use std::time::Duration;

use serde_json::{json, Value};

use crate::helpers::{try_spawn_app, vm_request, TestApp};
use crate::wire::{kinds, Vm};

/// Generous: several real Terraform runs share the machine with other tests.
const APPLY_WITHIN: Duration = Duration::from_secs(120);

fn variables(app: &TestApp, vm: &str) -> Value {
    let vars = app.work.path().join(vm).join("job-1/terraform.tfvars.json");
    serde_json::from_slice(&std::fs::read(vars).unwrap()).unwrap()
}

#[tokio::test]
async fn a_vm_named_as_naic_s_frontend_allows_is_created_under_its_derived_host_name() {
    let app = try_spawn_app(daemon::Roles::ALL, |_| {}).await.unwrap();
    let vm: Vm = app
        .post_json("/api/v1/vms", &vm_request(json!({"name": "My_VM.1"})), 202)
        .await;
    assert_eq!(vm.name, "My_VM.1", "the display name is kept");
    app.wait_for_status_within(&vm.id, "provisioned", APPLY_WITHIN)
        .await;

    let vars = variables(&app, &vm.id);
    assert_eq!(vars["vm_name"], "my-vm-1");
    let user_data = vars["user_data"].as_str().unwrap();
    assert!(user_data.contains("\nhostname: my-vm-1\n"), "{user_data}");
    assert!(!user_data.contains("My_VM.1"), "{user_data}");
    assert_eq!(app.vm(&vm.id).await.name, "My_VM.1");

    // The simulation is off: nothing calls back.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(app.vm(&vm.id).await.status, "provisioned");
    let events = app.events(&vm.id).await;
    assert!(
        !events
            .iter()
            .any(|e| e.kind == "BootStarted" || e.kind == "PhonedHome"),
        "{:?}",
        kinds(&events)
    );
}

#[tokio::test]
async fn with_the_simulated_boot_a_local_vm_reaches_running_through_its_callbacks() {
    let app = try_spawn_app(daemon::Roles::ALL, |config| {
        config.local_boot = dispatcher::LocalBoot::Simulate {
            delay: Duration::from_millis(500),
        };
    })
    .await
    .unwrap();
    let id = app.create_ok(json!({"name": "Sim.Boot_1"})).await;
    let vm = app
        .wait_for_status_within(&id, "running", APPLY_WITHIN)
        .await;
    assert_eq!(vm.hostname.as_deref(), Some("sim-boot-1"));

    let events = app.events(&id).await;
    let kinds = kinds(&events);
    let at = |kind: &str| kinds.iter().position(|k| *k == kind);
    let (applied, booted, phoned) = (at("Applied"), at("BootStarted"), at("PhonedHome"));
    assert!(
        applied.is_some() && applied < booted && booted < phoned,
        "{kinds:?}"
    );
    for event in events
        .iter()
        .filter(|e| e.kind == "BootStarted" || e.kind == "PhonedHome")
    {
        assert_eq!(event.actor.as_deref(), Some("vm"), "{event:?}");
    }
    // Once each: the URLs work once, and the simulation calls each once.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let events = app.events(&id).await;
    assert_eq!(events.iter().filter(|e| e.kind == "PhonedHome").count(), 1);
    assert_eq!(events.iter().filter(|e| e.kind == "BootStarted").count(), 1);
}
