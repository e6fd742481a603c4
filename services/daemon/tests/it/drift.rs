//! Drift end to end with real Terraform on the `local` provider: the scheduled drift check
//! queues refresh jobs by itself, a moved address becomes `IpChanged`, and the resources a
//! refresh finds changed outside Terraform become `DriftDetected` and show in the VM.
//!
//! The `local` provider has no resources (no provider plugin can be downloaded here), so
//! nothing of it can drift for real. A wrapper in front of real Terraform (`TERRAFORM_BIN`)
//! stands in for a cloud that drifted: while a file `drift.json` exists, `terraform show
//! -json` of the refresh's saved plan answers that document (a plan with a
//! `resource_drift` array, in Terraform's documented shape) instead of the real one. Every
//! other command, the refresh's `plan -refresh-only` and `apply` of the plan included, is
//! real Terraform on the real `pg` backend; the address moves for real when the wrapper
//! gives Terraform a new `TF_VAR_address_epoch` (the file `epoch`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::json;

use crate::helpers::{terraform_wrapper, try_spawn_app, TestApp};
use crate::wire::{kinds, DriftedResource, Event, JobDetail, LogLine, Vm};

const WRAPPER: &str = r#"
VM="${TF_WORKSPACE#vm-}"
case "$1" in
  plan|show|apply|destroy) echo "$1 $VM" >> "$DIR/invocations" ;;
esac
export TF_VAR_address_epoch="$(cat "$DIR/epoch" 2>/dev/null || echo 0)"
case " $* " in
  *".tfplan "*) ;;
  *) if [ "$1" = apply ] && [ -e "$DIR/fail-apply" ]; then echo "Error: the cloud refused (test)" >&2; exit 1; fi ;;
esac
if [ "$1" = show ] && [ -e "$DIR/drift.json" ]; then cat "$DIR/drift.json"; exit 0; fi
"#;

/// What the stand-in cloud changed: an instance resized and its secret changed (values
/// that must never be shown), and a security group rule deleted.
fn drift_document() -> serde_json::Value {
    json!({
        "format_version": "0.2",
        "terraform_version": "1.0.3",
        "variables": {"admin_password": {"value": "hunter2-never-shown"}},
        "resource_drift": [
            {
                "address": "openstack_compute_instance_v2.vm",
                "mode": "managed",
                "type": "openstack_compute_instance_v2",
                "name": "vm",
                "change": {
                    "actions": ["update"],
                    "before": {"id": "i-1", "flavor_name": "m1.small", "admin_pass": "hunter2-never-shown"},
                    "after": {"id": "i-1", "flavor_name": "m1.xlarge-never-shown", "admin_pass": "rotated-never-shown"},
                    "before_sensitive": {"admin_pass": true},
                    "after_sensitive": {"admin_pass": true}
                }
            },
            {
                "address": "openstack_networking_secgroup_rule_v2.ssh",
                "mode": "managed",
                "type": "openstack_networking_secgroup_rule_v2",
                "name": "ssh",
                "change": {
                    "actions": ["delete"],
                    "before": {"id": "r-1", "remote_ip_prefix": "192.0.2.0/24"},
                    "after": null,
                    "before_sensitive": {},
                    "after_sensitive": false
                }
            }
        ]
    })
}

fn expected_drift() -> Vec<DriftedResource> {
    vec![
        DriftedResource {
            address: "openstack_compute_instance_v2.vm".into(),
            action: "update".into(),
            attributes: vec!["admin_pass".into(), "flavor_name".into()],
        },
        DriftedResource {
            address: "openstack_networking_secgroup_rule_v2.ssh".into(),
            action: "delete".into(),
            attributes: vec![],
        },
    ]
}

struct Drifting {
    app: TestApp,
    dir: tempfile::TempDir,
}

impl Drifting {
    /// A daemon whose Terraform is the wrapper, with the drift check every `interval`
    /// (queuing at most `batch` refreshes a pass), or without it.
    async fn start(check: Option<(Duration, usize)>) -> Drifting {
        let dir = tempfile::tempdir().unwrap();
        let wrapper = terraform_wrapper(dir.path(), WRAPPER);
        let app = try_spawn_app(daemon::Roles::ALL, |config| {
            config.terraform_bin = wrapper;
            config.drift_check =
                check.map(|(interval, batch)| ingester::DriftCheckConfig { interval, batch });
        })
        .await
        .expect("the application starts");
        Drifting { app, dir }
    }

    fn file(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn drift_in_the_cloud(&self) {
        let document = serde_json::to_vec(&drift_document()).unwrap();
        std::fs::write(self.file("drift.json"), document).unwrap();
    }

    /// The Terraform commands run for `vm`, in order.
    fn invocations(&self, vm: &str) -> Vec<String> {
        read_lines(&self.file("invocations"))
            .into_iter()
            .filter_map(|l| l.strip_suffix(&format!(" {vm}")).map(str::to_owned))
            .collect()
    }

    async fn jobs(&self, vm: &str) -> Vec<JobDetail> {
        self.app.get_json(&format!("/api/v1/vms/{vm}/jobs")).await
    }

    /// Waits until `vm`'s history has an event `kind`; its events then.
    async fn wait_event(&self, vm: &str, kind: &str) -> Vec<Event> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        loop {
            let events = self.app.events(vm).await;
            if events.iter().any(|e| e.kind == kind) {
                return events;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "no {kind} in 60 s: {:?}",
                kinds(&events)
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    async fn wait_job(&self, vm: &str, job: u32, state: &str) -> JobDetail {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(found) = self.jobs(vm).await.into_iter().find(|j| j.id == job) {
                if found.state == state {
                    return found;
                }
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "job {job} of {vm} never became {state}: {:?}",
                self.jobs(vm).await
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Nothing the API shows of `vm` (the VM, its history, its lines) holds a value of the
    /// drift document.
    async fn assert_no_drifted_value_shown(&self, vm: &str) {
        let shown = [
            self.app.get(&format!("/api/v1/vms/{vm}")),
            self.app.get(&format!("/api/v1/vms/{vm}/events")),
            self.app.get(&format!("/api/v1/vms/{vm}/logs")),
        ];
        for request in shown {
            let text = request.send().await.unwrap().text().await.unwrap();
            for value in ["never-shown", "hunter2"] {
                assert!(!text.contains(value), "{value} shown: {text}");
            }
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

#[tokio::test]
async fn the_drift_check_refreshes_running_vms_by_itself_and_records_what_drifted() {
    let drifting = Drifting::start(Some((Duration::from_secs(2), 1))).await;
    let app = &drifting.app;
    let first = app.create_ok(json!({"name": "drift-1"})).await;
    let second = app.create_ok(json!({"name": "drift-2"})).await;
    let failed = app
        .create_ok(json!({"name": "drift-3", "template": "broken"}))
        .await;
    let before = app.wait_for_status(&first, "provisioned").await;
    app.wait_for_status(&second, "provisioned").await;
    app.wait_for_status(&failed, "failed").await;
    // The cloud moves the first VM and changes resources outside Terraform.
    std::fs::write(drifting.file("epoch"), "7").unwrap();
    drifting.drift_in_the_cloud();

    // Nobody asks: the drift check queues the refreshes.
    let events = drifting.wait_event(&first, "DriftDetected").await;
    drifting.wait_event(&second, "DriftDetected").await;

    // The refresh that found the drift recorded it after its `Refreshed` (the one that
    // found the new address may be an earlier one: the check may run between the two
    // changes of the stand-in cloud).
    let detected = events.iter().find(|e| e.kind == "DriftDetected").unwrap();
    let job_id = detected.data["job_id"].as_u64().unwrap() as u32;
    let of_job: Vec<&str> = events
        .iter()
        .filter(|e| e.data["job_id"] == job_id && e.kind != "LogLine")
        .map(|e| e.kind.as_str())
        .collect();
    assert!(
        of_job.ends_with(&["Refreshed", "DriftDetected"])
            || of_job.ends_with(&["Refreshed", "IpChanged", "DriftDetected"]),
        "{of_job:?}"
    );
    let events = drifting.wait_event(&first, "IpChanged").await;
    let refresh = drifting.wait_job(&first, job_id, "succeeded").await;
    assert_eq!(refresh.action, "refresh");
    assert_eq!(refresh.requested_by.as_deref(), Some("watchdog"));
    let vm: Vm = app.vm(&first).await;
    assert_ne!(vm.ip, before.ip);
    let state = app.terraform_state(&first).await;
    assert_eq!(
        vm.ip.as_deref(),
        state["outputs"]["vm_ip"]["value"].as_str()
    );
    let changed = events.iter().find(|e| e.kind == "IpChanged").unwrap();
    assert_eq!(changed.data["vm_ip"], vm.ip.clone().unwrap());
    // The last refresh's drift (the check goes on, and the stand-in cloud stays drifted).
    let drift = vm.drift.expect("the VM shows its drift");
    assert!(drift.job_id >= job_id, "{drift:?}");
    assert_eq!(drift.resources, expected_drift());
    // The refresh read the drift from its saved plan, between the plan and its apply.
    assert_eq!(
        drifting.invocations(&first)[1..4],
        ["plan", "show", "apply"],
        "{:?}",
        drifting.invocations(&first)
    );
    let lines: Vec<LogLine> = app
        .get_json(&format!("/api/v1/vms/{first}/jobs/{job_id}/logs"))
        .await;
    assert!(
        lines.iter().any(|l| l.message.contains(
            "changed outside Terraform: 2 resource(s): openstack_compute_instance_v2.vm \
             (update: admin_pass, flavor_name)"
        )),
        "{lines:?}"
    );
    drifting.assert_no_drifted_value_shown(&first).await;
    // A failed VM is not refreshed; the running ones are, again, in turn.
    drifting.wait_job(&first, job_id + 1, "succeeded").await;
    drifting.wait_job(&second, 3, "succeeded").await;
    assert!(
        drifting
            .jobs(&failed)
            .await
            .iter()
            .all(|j| j.action != "refresh"),
        "{:?}",
        drifting.jobs(&failed).await
    );
}

#[tokio::test]
async fn drift_shows_in_the_vm_until_the_next_successful_create_clears_it() {
    // Without the drift check: the refresh is a user's. A create can run again only after
    // one failed (retry), so the VM here is one whose create failed, then was refreshed.
    let drifting = Drifting::start(None).await;
    let app = &drifting.app;
    std::fs::write(drifting.file("fail-apply"), "").unwrap();
    let vm = app.create_ok(json!({"name": "drift-4"})).await;
    app.wait_for_status(&vm, "failed").await;
    std::fs::remove_file(drifting.file("fail-apply")).unwrap();
    drifting.drift_in_the_cloud();

    let _: Vm = app
        .post_json(&format!("/api/v1/vms/{vm}/refresh"), &json!({}), 202)
        .await;
    drifting.wait_job(&vm, 2, "succeeded").await;

    let shown = app.vm(&vm).await;
    assert_eq!(shown.status, "failed");
    let drift = shown.drift.expect("the VM shows its drift");
    assert_eq!((drift.job_id, drift.resources), (2, expected_drift()));
    drifting.assert_no_drifted_value_shown(&vm).await;

    std::fs::remove_file(drifting.file("drift.json")).unwrap();
    let _: Vm = app
        .post_json(&format!("/api/v1/vms/{vm}/retry"), &json!({}), 202)
        .await;
    let applied = app.wait_for_status(&vm, "provisioned").await;

    assert_eq!(applied.drift, None);
    let history = app.events(&vm).await;
    assert_eq!(
        kinds(&history)
            .iter()
            .filter(|k| **k == "DriftDetected")
            .count(),
        1,
        "{:?}",
        kinds(&history)
    );
}

#[tokio::test]
async fn an_address_change_stored_by_an_earlier_version_is_published_and_shown_as_ip_changed() {
    use domain::provisioning::{Provisioning, ProvisioningCommand, VmId};
    let app = crate::helpers::spawn_app_with(daemon::Roles {
        api: true,
        relay: true,
        projector: true,
        ..daemon::Roles::NONE
    })
    .await;
    let vm = VmId::new();
    let command = ProvisioningCommand::Request {
        spec: crate::helpers::vm_spec("drift-old"),
        at: time::OffsetDateTime::now_utc(),
    };
    let metadata = store::Metadata::new(store::Actor::Admin, "drift-test");
    store::execute::<Provisioning>(&app.pool, vm, command, &metadata)
        .await
        .unwrap();
    // As an earlier version stored it: `Requested` is 1, its `JobQueued` 2.
    store::sqlx::query(
        "INSERT INTO events (aggregate_type, aggregate_id, sequence, event_type, event_version,
                             payload, metadata)
         VALUES ('Provisioning', $1, 3, 'AddressChanged', '1.0', $2::text::json, '{}')",
    )
    .bind(vm.to_string())
    .bind(
        json!({"type": "AddressChanged", "data": {"job_id": 1, "vm_ip": "10.77.9.9"}}).to_string(),
    )
    .execute(&app.pool)
    .await
    .unwrap();

    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let response = app.get(&format!("/api/v1/vms/{vm}")).send().await.unwrap();
        if response.status() == 200 {
            let shown: Vm = response.json().await.unwrap();
            if shown.ip.as_deref() == Some("10.77.9.9") {
                break;
            }
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the old event was not folded"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let published = loop {
        let messages = app.stream_messages().await;
        if let Some(m) = messages.into_iter().find(|m| m.sequence == 3) {
            break m;
        }
        assert!(tokio::time::Instant::now() < deadline, "not published");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(published.event_type, "IpChanged");
    assert_eq!(published.data["vm_ip"], "10.77.9.9");
    // The command path loads it too (through the upcaster: today's type has no
    // `AddressChanged`), and so does a view of the VM at a past point.
    let (state, sequence) = store::load::<Provisioning>(&app.pool, &vm.to_string())
        .await
        .unwrap();
    assert_eq!(sequence, 3);
    assert_eq!(state.lifecycle().ip.as_deref(), Some("10.77.9.9"));
    let then: Vm = app
        .get_json(&format!("/api/v1/vms/{vm}?at={}", i64::MAX))
        .await;
    assert_eq!(then.ip.as_deref(), Some("10.77.9.9"));
}
