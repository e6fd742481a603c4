//! Drift: what a refresh reports of resources changed outside Terraform, and of a moved
//! address; how stored events of earlier versions still read; what the read model shows.

use std::collections::BTreeMap;

use time::OffsetDateTime;

use super::tests::*;
use super::*;
use crate::provisioning::{DriftReport, DriftedResource, Stamp, VmView};

fn refreshing() -> Vec<ProvisioningEvent> {
    [
        provisioned(),
        vec![
            queued(2, JobAction::Refresh),
            started(2, JobAction::Refresh),
        ],
    ]
    .concat()
}

fn drifted() -> Vec<DriftedResource> {
    vec![
        DriftedResource {
            address: "openstack_compute_instance_v2.vm".into(),
            action: "update".into(),
            attributes: vec!["flavor_name".into(), "metadata.owner".into()],
        },
        DriftedResource {
            address: "openstack_networking_secgroup_rule_v2.ssh[0]".into(),
            action: "delete".into(),
            attributes: vec![],
        },
    ]
}

fn with_drift(exit_code: i32, ip: &str) -> JobOutcome {
    JobOutcome {
        drift: drifted(),
        ..outcome(
            exit_code,
            BTreeMap::from([("vm_ip".to_owned(), serde_json::json!(ip))]),
        )
    }
}

fn ip_outputs(ip: &str) -> BTreeMap<String, serde_json::Value> {
    BTreeMap::from([("vm_ip".to_owned(), serde_json::json!(ip))])
}

#[test]
fn a_refresh_that_finds_drift_records_it_after_refreshed_and_the_new_address() {
    Given::with(())
        .given(refreshing())
        .when(finish(2, with_drift(0, "10.77.0.10")))
        .then_expect_events(vec![
            ProvisioningEvent::Refreshed {
                job_id: job(2),
                outputs: ip_outputs("10.77.0.10"),
            },
            ProvisioningEvent::IpChanged {
                job_id: job(2),
                vm_ip: "10.77.0.10".into(),
            },
            ProvisioningEvent::DriftDetected {
                job_id: job(2),
                resources: drifted(),
            },
        ]);
}

#[test]
fn a_refresh_without_drift_records_no_drift() {
    Given::with(())
        .given(refreshing())
        .when(finish(2, outcome(0, outputs_with_ip())))
        .then_expect_events(vec![ProvisioningEvent::Refreshed {
            job_id: job(2),
            outputs: outputs_with_ip(),
        }]);
}

#[test]
fn a_failed_refresh_records_no_drift_whatever_the_runner_collected() {
    Given::with(())
        .given(refreshing())
        .when(finish(2, with_drift(1, "10.77.0.10")))
        .then_expect_events(vec![ProvisioningEvent::Failed {
            job_id: job(2),
            action: JobAction::Refresh,
            reason: "terraform exited with code 1".into(),
            diagnostics: vec![],
            exit_code: Some(1),
            forced: false,
        }]);
}

#[test]
fn a_drift_event_is_stored_with_names_of_attributes_only() {
    let event = ProvisioningEvent::DriftDetected {
        job_id: job(2),
        resources: drifted(),
    };
    let stored = serde_json::to_value(&event).unwrap();
    assert_eq!(
        stored,
        serde_json::json!({
            "type": "DriftDetected",
            "data": {"job_id": 2, "resources": [
                {"address": "openstack_compute_instance_v2.vm", "action": "update",
                 "attributes": ["flavor_name", "metadata.owner"]},
                {"address": "openstack_networking_secgroup_rule_v2.ssh[0]", "action": "delete",
                 "attributes": []}
            ]}
        })
    );
    assert_eq!(
        serde_json::from_value::<ProvisioningEvent>(stored).unwrap(),
        event
    );
    assert_eq!(event.name(), "DriftDetected");
}

fn stamp(secs: i64) -> Stamp<'static> {
    Stamp {
        at: OffsetDateTime::from_unix_timestamp(1_800_000_000 + secs).unwrap(),
        actor: Some("watchdog"),
    }
}

fn fold(view: &mut VmView, events: Vec<ProvisioningEvent>) {
    for event in events {
        let next = view.last_sequence + 1;
        view.update(next, stamp(next as i64), &event);
    }
}

#[test]
fn the_read_model_shows_the_last_drift_until_a_successful_create_clears_it() {
    // A create that failed, a refresh of what it left that found drift, then a retry.
    let failed = ProvisioningEvent::Failed {
        job_id: job(1),
        action: JobAction::Create,
        reason: "boom".into(),
        diagnostics: vec![],
        exit_code: Some(1),
        forced: false,
    };
    let mut view = VmView::default();
    fold(
        &mut view,
        [
            applying(),
            vec![
                failed,
                queued(2, JobAction::Refresh),
                started(2, JobAction::Refresh),
                ProvisioningEvent::Refreshed {
                    job_id: job(2),
                    outputs: ip_outputs("10.77.0.10"),
                },
                ProvisioningEvent::DriftDetected {
                    job_id: job(2),
                    resources: drifted(),
                },
            ],
        ]
        .concat(),
    );
    let at = stamp(view.last_sequence as i64).at;
    assert_eq!(
        view.drift,
        Some(DriftReport {
            job_id: job(2),
            detected_at: at,
            resources: drifted()
        })
    );

    // A later refresh without drift leaves it shown: only an apply makes it as configured.
    fold(
        &mut view,
        vec![
            queued(3, JobAction::Refresh),
            ProvisioningEvent::Refreshed {
                job_id: job(3),
                outputs: ip_outputs("10.77.0.10"),
            },
        ],
    );
    assert_eq!(view.drift.as_ref().map(|d| d.job_id), Some(job(2)));

    fold(
        &mut view,
        vec![
            queued(4, JobAction::Create),
            started(4, JobAction::Create),
            ProvisioningEvent::Applied {
                job_id: job(4),
                vm_ip: "10.77.0.10".into(),
                outputs: ip_outputs("10.77.0.10"),
            },
        ],
    );
    assert_eq!(view.drift, None);
    assert_eq!(view.lifecycle.status, super::VmStatus::Provisioned);
}

#[test]
fn a_destroyed_vm_shows_no_drift() {
    let mut view = VmView::default();
    fold(
        &mut view,
        [
            refreshing(),
            vec![
                ProvisioningEvent::Refreshed {
                    job_id: job(2),
                    outputs: outputs_with_ip(),
                },
                ProvisioningEvent::DriftDetected {
                    job_id: job(2),
                    resources: drifted(),
                },
            ],
        ]
        .concat(),
    );
    assert!(view.drift.is_some());
    fold(
        &mut view,
        vec![
            ProvisioningEvent::DestroyRequested,
            queued(3, JobAction::Destroy),
            ProvisioningEvent::Destroyed { job_id: job(3) },
        ],
    );
    assert_eq!(view.drift, None);
}
