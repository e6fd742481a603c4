//! The VM's life around its jobs: boot callbacks and readiness, the boot timeout, expiry,
//! extension and its warnings, as given / when / then.

use std::time::Duration;

use cqrs_es::Aggregate;
use time::OffsetDateTime;

use super::tests::*;
use super::*;
use crate::provisioning::{AppStatus, BootReport, ExtendLimit};

fn hours(h: i64) -> OffsetDateTime {
    AT + time::Duration::hours(h)
}

fn minutes(m: i64) -> OffsetDateTime {
    AT + time::Duration::minutes(m)
}

fn callback(n: u32, report: BootReport) -> ProvisioningCommand {
    ProvisioningCommand::Callback {
        job_id: job(n),
        report,
    }
}

fn phone_home() -> BootReport {
    BootReport::PhoneHome {
        hostname: "web-1".into(),
        host_keys: vec![],
    }
}

fn phoned_home() -> ProvisioningEvent {
    ProvisioningEvent::PhonedHome {
        job_id: job(1),
        hostname: "web-1".into(),
        host_keys: vec![],
    }
}

fn unreachable() -> ProvisioningEvent {
    ProvisioningEvent::Unreachable {
        job_id: job(1),
        reason: "no phone-home within 600 s".into(),
    }
}

fn mark_unreachable() -> ProvisioningCommand {
    ProvisioningCommand::MarkUnreachable {
        job_id: job(1),
        reason: "no phone-home within 600 s".into(),
    }
}

/// The lifecycle after `events`.
fn lifecycle(events: &[ProvisioningEvent]) -> Lifecycle {
    let mut vm = Provisioning::default();
    for event in events {
        vm.apply(event.clone());
    }
    vm.lifecycle().clone()
}

fn refused(why: &str) -> ProvisioningError {
    ProvisioningError::CallbackRefused(why.into())
}

#[test]
fn a_request_expires_after_its_duration() {
    let expiry = lifecycle(&requested()).expiry.unwrap();
    assert_eq!(expiry.expires_at, hours(8));
}

#[test]
fn boot_started_then_phone_home_bring_a_provisioned_vm_to_running() {
    Given::with(())
        .given(provisioned())
        .when(callback(1, BootReport::BootStarted))
        .then_expect_events(vec![ProvisioningEvent::BootStarted { job_id: job(1) }]);
    let booting = [
        provisioned(),
        vec![ProvisioningEvent::BootStarted { job_id: job(1) }],
    ]
    .concat();
    assert_eq!(lifecycle(&booting).status, VmStatus::Initializing);
    Given::with(())
        .given(booting.clone())
        .when(callback(1, phone_home()))
        .then_expect_events(vec![phoned_home()]);
    let running = lifecycle(&[booting, vec![phoned_home()]].concat());
    assert_eq!(running.status, VmStatus::Running);
    assert_eq!(running.boot.unwrap().hostname.as_deref(), Some("web-1"));
}

#[test]
fn each_callback_is_single_use_and_bound_to_the_create_job() {
    let running = [provisioned(), vec![phoned_home()]].concat();
    Given::with(())
        .given(running.clone())
        .when(callback(1, phone_home()))
        .then_expect_error(refused("phone_home was reported already"));
    Given::with(())
        .given(running)
        .when(callback(2, BootReport::BootStarted))
        .then_expect_error(refused("no VM of job 2 stands"));
    Given::with(())
        .given(applying())
        .when(callback(1, phone_home()))
        .then_expect_error(refused("no VM of job 1 stands"));
}

#[test]
fn a_vm_being_destroyed_takes_no_callback() {
    let destroying = [
        provisioned(),
        vec![
            ProvisioningEvent::DestroyRequested,
            queued(2, JobAction::Destroy),
        ],
    ]
    .concat();
    Given::with(())
        .given(destroying)
        .when(callback(1, phone_home()))
        .then_expect_error(refused("the VM is destroy_requested"));
}

#[test]
fn no_phone_home_in_time_is_unreachable_until_a_late_one() {
    Given::with(())
        .given(provisioned())
        .when(mark_unreachable())
        .then_expect_events(vec![unreachable()]);
    let lost = [provisioned(), vec![unreachable()]].concat();
    assert_eq!(lifecycle(&lost).status, VmStatus::Unreachable);
    Given::with(())
        .given(lost.clone())
        .when(mark_unreachable())
        .then_expect_events(vec![]);
    Given::with(())
        .given(lost.clone())
        .when(callback(1, phone_home()))
        .then_expect_events(vec![phoned_home()]);
    let late = lifecycle(&[lost, vec![phoned_home()]].concat());
    assert_eq!(late.status, VmStatus::Running);
    Given::with(())
        .given([provisioned(), vec![phoned_home()]].concat())
        .when(mark_unreachable())
        .then_expect_events(vec![]);
}

#[test]
fn the_application_reports_its_readiness() {
    let ready = ProvisioningEvent::AppReady {
        job_id: job(1),
        url: "https://10.77.0.9:8888/".into(),
    };
    Given::with(())
        .given(provisioned())
        .when(callback(
            1,
            BootReport::AppReady {
                url: "https://10.77.0.9:8888/".into(),
            },
        ))
        .then_expect_events(vec![ready.clone()]);
    let app = lifecycle(&[provisioned(), vec![ready]].concat()).app;
    assert_eq!(
        app,
        Some(AppStatus::Ready {
            url: "https://10.77.0.9:8888/".into()
        })
    );
}

#[test]
fn an_owner_extends_within_the_longest_duration() {
    Given::with(())
        .given(provisioned())
        .when(ProvisioningCommand::Extend {
            hours: 2,
            at: AT,
            limit: None,
        })
        .then_expect_events(vec![ProvisioningEvent::ExpiryExtended {
            hours: 2,
            expires_at: hours(10),
        }]);
    Given::with(())
        .given(provisioned())
        .when(ProvisioningCommand::Extend {
            hours: 161,
            at: AT,
            limit: None,
        })
        .then_expect_error(ProvisioningError::ExtendTooFar {
            longest: 168,
            left: 8,
        });
    Given::with(())
        .given(provisioned())
        .when(ProvisioningCommand::Extend {
            hours: 0,
            at: AT,
            limit: None,
        })
        .then_expect_error(ProvisioningError::ExtendHours { longest: 168 });
    // Past its expiry (before the sweep came), an extension counts from now.
    Given::with(())
        .given(provisioned())
        .when(ProvisioningCommand::Extend {
            hours: 1,
            at: hours(9),
            limit: None,
        })
        .then_expect_events(vec![ProvisioningEvent::ExpiryExtended {
            hours: 1,
            expires_at: hours(10),
        }]);
}

#[test]
fn an_extension_stops_at_the_policy_limit_counted_from_the_request() {
    // Requested at AT for 8 hours; the policy "short" allows 10 hours from then.
    let limit = || {
        Some(ExtendLimit {
            until: hours(10),
            hours: 10,
            policy: "short".into(),
        })
    };
    Given::with(())
        .given(provisioned())
        .when(ProvisioningCommand::Extend {
            hours: 2,
            at: AT,
            limit: limit(),
        })
        .then_expect_events(vec![ProvisioningEvent::ExpiryExtended {
            hours: 2,
            expires_at: hours(10),
        }]);
    Given::with(())
        .given(provisioned())
        .when(ProvisioningCommand::Extend {
            hours: 3,
            at: AT,
            limit: limit(),
        })
        .then_expect_error(ProvisioningError::ExtendPastPolicy {
            policy: "short".into(),
            hours: 10,
        });
}

#[test]
fn an_admin_sets_the_expiry_earlier_or_later_but_not_in_the_past() {
    for to in [minutes(1), hours(400)] {
        Given::with(())
            .given(provisioned())
            .when(ProvisioningCommand::SetExpiry {
                expires_at: to,
                at: AT,
            })
            .then_expect_events(vec![ProvisioningEvent::ExpirySet { expires_at: to }]);
    }
    Given::with(())
        .given(provisioned())
        .when(ProvisioningCommand::SetExpiry {
            expires_at: AT,
            at: AT,
        })
        .then_expect_error(ProvisioningError::ExpiryPassed);
}

#[test]
fn a_destroyed_vm_cannot_be_extended() {
    let destroyed = [
        provisioned(),
        vec![
            ProvisioningEvent::DestroyRequested,
            queued(2, JobAction::Destroy),
            started(2, JobAction::Destroy),
            ProvisioningEvent::Destroyed { job_id: job(2) },
        ],
    ]
    .concat();
    Given::with(())
        .given(destroyed)
        .when(ProvisioningCommand::Extend {
            hours: 1,
            at: AT,
            limit: None,
        })
        .then_expect_error(ProvisioningError::CannotExtend(VmStatus::Destroyed));
}

#[test]
fn a_warning_is_sent_once_per_expiry() {
    let warning = ProvisioningEvent::ExpiryWarning {
        before_secs: 3600,
        expires_at: hours(8),
    };
    let warn = |at| ProvisioningCommand::WarnExpiry {
        before: Duration::from_secs(3600),
        at,
    };
    Given::with(())
        .given(provisioned())
        .when(warn(hours(6)))
        .then_expect_events(vec![]);
    Given::with(())
        .given(provisioned())
        .when(warn(minutes(7 * 60 + 30)))
        .then_expect_events(vec![warning.clone()]);
    let warned = [provisioned(), vec![warning]].concat();
    Given::with(())
        .given(warned.clone())
        .when(warn(minutes(7 * 60 + 40)))
        .then_expect_events(vec![]);
    // Extended: the new expiry is warned about again when its time comes.
    let extended = ProvisioningEvent::ExpiryExtended {
        hours: 2,
        expires_at: hours(10),
    };
    Given::with(())
        .given([warned, vec![extended]].concat())
        .when(warn(minutes(9 * 60 + 30)))
        .then_expect_events(vec![ProvisioningEvent::ExpiryWarning {
            before_secs: 3600,
            expires_at: hours(10),
        }]);
}

#[test]
fn an_expired_vm_gets_its_destroy_once() {
    Given::with(())
        .given(provisioned())
        .when(ProvisioningCommand::Expire { at: hours(8) })
        .then_expect_events(vec![
            ProvisioningEvent::Expired {
                expires_at: hours(8),
                reason: "the VM expired at 2026-12-03T17:00:00Z: its time ran out".into(),
            },
            ProvisioningEvent::DestroyRequested,
            queued(2, JobAction::Destroy),
        ]);
    Given::with(())
        .given(provisioned())
        .when(ProvisioningCommand::Expire { at: hours(7) })
        .then_expect_error(ProvisioningError::NotExpired);
    let expiring = [
        provisioned(),
        vec![
            ProvisioningEvent::Expired {
                expires_at: hours(8),
                reason: "the VM expired at 2026-12-03T17:00:00Z: its time ran out".into(),
            },
            ProvisioningEvent::DestroyRequested,
            queued(2, JobAction::Destroy),
        ],
    ]
    .concat();
    Given::with(())
        .given(expiring)
        .when(ProvisioningCommand::Expire { at: hours(9) })
        .then_expect_events(vec![]);
}
