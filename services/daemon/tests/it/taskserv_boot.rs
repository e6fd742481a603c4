//! A VM created with taskservs on `local`, end to end with real Terraform: its cloud-init
//! holds the plan's scripts and the driver that runs them in order; the simulated boot
//! reports each step after phone-home, and the VM is `running` only once the last is
//! installed; by hand, a failed first step that stops the plan leaves the rest skipped.

use std::path::PathBuf;
use std::time::Duration;

use base64::Engine;
use domain::provisioning::Provisioning;
use domain::taskservs::TaskservState;
use serde_json::{json, Value};

use crate::helpers::{try_spawn_app, TestApp};
use crate::wire::{kinds, Event};

/// Generous: several real Terraform runs share the machine with other tests.
const APPLY_WITHIN: Duration = Duration::from_secs(120);

/// grafana's plan: what it requires first, in registry order.
const PLAN: [&str; 3] = ["docker", "prometheus-node-exporter", "grafana"];

const RUN_SH: &str = "/var/lib/provisioning/taskservs/run.sh";

async fn app_with(local_boot: dispatcher::LocalBoot) -> TestApp {
    try_spawn_app(daemon::Roles::ALL, |config| {
        config.local_boot = local_boot;
    })
    .await
    .expect("the application starts")
}

fn workdir(app: &TestApp, vm: &str) -> PathBuf {
    app.work.path().join(vm).join("job-1")
}

/// The cloud-init of job 1 of `vm`, parsed.
fn cloud_init(app: &TestApp, vm: &str) -> Value {
    let vars = std::fs::read(workdir(app, vm).join("terraform.tfvars.json")).unwrap();
    let vars: Value = serde_json::from_slice(&vars).unwrap();
    let user_data = vars["user_data"].as_str().unwrap();
    assert!(user_data.len() < 16 * 1024, "{} bytes", user_data.len());
    serde_saphyr::from_str(user_data).expect("cloud-init is YAML")
}

/// The decoded content of the file cloud-init writes at `path`.
fn written(cloud_init: &Value, path: &str) -> String {
    let file = cloud_init["write_files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == path)
        .unwrap_or_else(|| panic!("no {path} in write_files"));
    assert_eq!(file["encoding"], "gz+b64");
    let gzipped = base64::engine::general_purpose::STANDARD
        .decode(file["content"].as_str().unwrap())
        .unwrap();
    let mut text = String::new();
    std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&gzipped[..]), &mut text)
        .unwrap();
    text
}

/// The taskserv events of `events`: (kind, taskserv), in order.
fn taskserv_events(events: &[Event]) -> Vec<(String, String)> {
    events
        .iter()
        .filter(|e| e.kind.starts_with("Taskserv") && e.kind != "TaskservsRequested")
        .map(|e| (e.kind.clone(), e.data["name"].as_str().unwrap().to_owned()))
        .collect()
}

#[tokio::test]
async fn a_local_vm_with_taskservs_reports_each_in_plan_order_and_runs_only_after_the_last() {
    let app = app_with(dispatcher::LocalBoot::Simulate {
        delay: Duration::from_millis(300),
    })
    .await;
    let id = app
        .create_ok(
            json!({"name": "graf-1", "template": "large", "taskservs": [{"name": "grafana"}]}),
        )
        .await;

    // Whenever the VM reads `running`, every step was installed before.
    let deadline = tokio::time::Instant::now() + APPLY_WITHIN;
    loop {
        let status = app.vm(&id).await.status;
        if status == "running" {
            let events = app.events(&id).await;
            let installed = taskserv_events(&events)
                .into_iter()
                .filter(|(kind, _)| kind == "TaskservInstalled")
                .count();
            assert_eq!(installed, PLAN.len(), "{:?}", kinds(&events));
            break;
        }
        assert!(status != "failed", "{:?}", app.vm(&id).await);
        assert!(tokio::time::Instant::now() < deadline, "never running");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // (a) cloud-init holds the plan: the scripts, and run.sh running them in order, last.
    let doc = cloud_init(&app, &id);
    let run = written(&doc, RUN_SH);
    let steps: Vec<&str> = run
        .lines()
        .filter_map(|l| l.strip_prefix("run_step "))
        .filter_map(|l| l.split(' ').next())
        .collect();
    assert_eq!(steps, PLAN);
    for name in PLAN {
        let install = written(
            &doc,
            &format!("/var/lib/provisioning/taskservs/{name}/install.sh"),
        );
        assert!(install.starts_with("#!"), "{install}");
    }
    let runcmd = doc["runcmd"].as_array().unwrap();
    assert_eq!(runcmd.last().unwrap(), &json!(["bash", RUN_SH]));

    // (b) each step started then installed, in plan order, after phone-home, by the VM.
    let events = app.events(&id).await;
    let expected: Vec<(String, String)> = PLAN
        .iter()
        .flat_map(|name| {
            ["TaskservStarted", "TaskservInstalled"].map(|k| (k.to_owned(), name.to_string()))
        })
        .collect();
    assert_eq!(taskserv_events(&events), expected);
    let all = kinds(&events);
    let phoned = all.iter().position(|k| *k == "PhonedHome").unwrap();
    let first = all.iter().position(|k| *k == "TaskservStarted").unwrap();
    assert!(phoned < first, "{all:?}");
    for event in events.iter().filter(|e| e.kind.starts_with("TaskservSt")) {
        assert_eq!(event.actor.as_deref(), Some("vm"), "{event:?}");
    }
    let grafana = events
        .iter()
        .find(|e| e.kind == "TaskservInstalled" && e.data["name"] == "grafana")
        .unwrap();
    assert_eq!(grafana.data["outputs"]["simulated"], "true", "{grafana:?}");
    assert_eq!(grafana.data["outputs"]["port"], "3000", "{grafana:?}");
    // Its declared outputs too, with made-up values.
    assert_eq!(
        grafana.data["outputs"]["admin_user"], "simulated-admin_user",
        "{grafana:?}"
    );
    let url = grafana.data["outputs"]["url"].as_str().unwrap();
    assert!(
        url.starts_with("https://") && url.ends_with(":3000"),
        "{url}"
    );
}

#[tokio::test]
async fn a_failed_first_taskserv_that_stops_the_plan_leaves_the_rest_skipped() {
    let app = app_with(dispatcher::LocalBoot::Off).await;
    let id = app
        .create_ok(
            json!({"name": "graf-2", "template": "large", "taskservs": [{"name": "grafana"}]}),
        )
        .await;
    app.wait_for_status_within(&id, "provisioned", APPLY_WITHIN)
        .await;

    let steps = std::fs::read(workdir(&app, &id).join("taskserv_callbacks.json")).unwrap();
    let steps: Vec<Value> = serde_json::from_slice(&steps).unwrap();
    let names: Vec<&str> = steps.iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names, PLAN);
    let post = |url: &Value, form: &[(&str, &str)]| {
        let request = app.client.post(url.as_str().unwrap()).form(form);
        async move { request.send().await.unwrap().status().as_u16() }
    };
    assert_eq!(post(&steps[0]["started"], &[]).await, 204);
    let failure = [("exit_code", "3"), ("last_lines", "E: no such package\n")];
    assert_eq!(post(&steps[0]["failed"], &failure).await, 204);
    // The rest will not run: a report for them is refused.
    let refused = post(&steps[1]["started"], &[]).await;
    assert!((400..500).contains(&refused), "{refused}");

    let events = app.events(&id).await;
    assert_eq!(
        taskserv_events(&events),
        [
            ("TaskservStarted".to_owned(), "docker".to_owned()),
            ("TaskservFailed".to_owned(), "docker".to_owned()),
        ]
    );
    let failed = events.iter().find(|e| e.kind == "TaskservFailed").unwrap();
    assert_eq!(failed.data["exit_code"], 3);
    // The VM's read model shows the rest skipped (it is projected a moment later).
    let expected = [
        ("docker", "failed"),
        ("prometheus-node-exporter", "skipped"),
        ("grafana", "skipped"),
    ];
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let vm: Value = app.get_json(&format!("/api/v1/vms/{id}")).await;
        let taskservs = vm["taskservs"].as_array().unwrap();
        let states: Vec<(&str, &str)> = taskservs
            .iter()
            .map(|t| (t["name"].as_str().unwrap(), t["state"].as_str().unwrap()))
            .collect();
        if states == expected {
            assert_eq!(taskservs[0]["exit_code"], 3, "{vm}");
            assert_eq!(taskservs[0]["last_lines"], json!(["E: no such package"]));
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "{states:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The aggregate agrees.
    let (vm, _) = store::load::<Provisioning>(&app.pool, &id).await.unwrap();
    assert!(matches!(
        vm.lifecycle().taskservs[0].state,
        TaskservState::Failed {
            exit_code: Some(3),
            ..
        }
    ));
}
