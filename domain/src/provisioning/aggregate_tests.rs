use std::collections::BTreeMap;

use cqrs_es::test::TestFramework;
use cqrs_es::Aggregate;

use super::*;
use crate::provisioning::{
    Cidr, Diagnostic, DurationHours, LogLineIn, ProviderId, Severity, SshPublicKey, TemplateId,
    VmName,
};

pub(super) type Given = TestFramework<Provisioning>;

pub(super) fn spec() -> VmSpec {
    VmSpec {
        name: VmName::parse("web-1").unwrap(),
        provider: ProviderId::parse("local").unwrap(),
        template: TemplateId::parse("small").unwrap(),
        image_name: "debian-12".into(),
        flavor_name: "local.small".into(),
        ssh_public_key: SshPublicKey::parse(
            "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEpXvA+cP8hcraKOw+cO1rzIpAv7ms7vMYjhAKF7Qed/ t@e",
        )
        .unwrap(),
        allow_ssh_from: vec![Cidr::parse("192.0.2.0/24").unwrap()],
        duration_hours: DurationHours::parse(8).unwrap(),
        username: "ubuntu".into(),
        owner: crate::identity::UserId::BUILTIN_ADMIN,
        taskservs: vec![],
        cluster: None,
    }
}

/// When the VM in these tests was requested; its spec asks for 8 hours.
pub(super) const AT: time::OffsetDateTime = time::macros::datetime!(2026-12-03 09:00 UTC);

pub(super) fn job(n: u32) -> JobId {
    JobId::new(n)
}

pub(super) fn requested() -> Vec<ProvisioningEvent> {
    vec![
        ProvisioningEvent::Requested {
            spec: spec(),
            expires_at: Some(AT + time::Duration::hours(8)),
        },
        queued(1, JobAction::Create),
    ]
}

pub(super) fn queued(n: u32, action: JobAction) -> ProvisioningEvent {
    ProvisioningEvent::JobQueued {
        job_id: job(n),
        action,
        spec: spec(),
    }
}

pub(super) fn started(n: u32, action: JobAction) -> ProvisioningEvent {
    ProvisioningEvent::JobStarted {
        job_id: job(n),
        action,
        runner: "local".into(),
    }
}

pub(super) fn applying() -> Vec<ProvisioningEvent> {
    [requested(), vec![started(1, JobAction::Create)]].concat()
}

pub(super) fn applied() -> ProvisioningEvent {
    ProvisioningEvent::Applied {
        job_id: job(1),
        vm_ip: "10.77.0.9".into(),
        outputs: outputs_with_ip(),
    }
}

pub(super) fn provisioned() -> Vec<ProvisioningEvent> {
    [applying(), vec![applied()]].concat()
}

fn destroying() -> Vec<ProvisioningEvent> {
    [
        provisioned(),
        vec![
            ProvisioningEvent::DestroyRequested,
            queued(2, JobAction::Destroy),
            started(2, JobAction::Destroy),
        ],
    ]
    .concat()
}

pub(super) fn outputs_with_ip() -> BTreeMap<String, serde_json::Value> {
    BTreeMap::from([("vm_ip".to_owned(), serde_json::json!("10.77.0.9"))])
}

pub(super) fn outcome(exit_code: i32, outputs: BTreeMap<String, serde_json::Value>) -> JobOutcome {
    JobOutcome {
        exit_code,
        outputs,
        diagnostics: vec![],
        lines: 0,
        drift: vec![],
    }
}

fn line(n: u32, message: &str) -> LogLineIn {
    LogLineIn {
        line: n,
        level: "info".into(),
        kind: "log".into(),
        message: message.into(),
    }
}

fn log_event(n: u32, message: &str) -> ProvisioningEvent {
    ProvisioningEvent::LogLine {
        job_id: job(1),
        line: n,
        level: "info".into(),
        kind: "log".into(),
        message: message.into(),
    }
}

pub(super) fn finish(n: u32, outcome: JobOutcome) -> ProvisioningCommand {
    ProvisioningCommand::FinishJob {
        job_id: job(n),
        outcome,
    }
}

#[test]
fn a_request_is_recorded_and_queues_the_first_apply_job() {
    Given::with(())
        .given_no_previous_events()
        .when(ProvisioningCommand::Request {
            spec: spec(),
            at: AT,
        })
        .then_expect_events(requested());
}

#[test]
fn a_vm_cannot_be_requested_twice() {
    Given::with(())
        .given(requested())
        .when(ProvisioningCommand::Request {
            spec: spec(),
            at: AT,
        })
        .then_expect_error(ProvisioningError::AlreadyRequested);
}

#[test]
fn a_runner_start_is_recorded_once() {
    Given::with(())
        .given(requested())
        .when(ProvisioningCommand::StartJob {
            job_id: job(1),
            runner: "local".into(),
        })
        .then_expect_events(vec![started(1, JobAction::Create)]);
    Given::with(())
        .given(applying())
        .when(ProvisioningCommand::StartJob {
            job_id: job(1),
            runner: "local".into(),
        })
        .then_expect_events(vec![]);
}

#[test]
fn a_start_for_another_job_is_refused() {
    Given::with(())
        .given(requested())
        .when(ProvisioningCommand::StartJob {
            job_id: job(7),
            runner: "local".into(),
        })
        .then_expect_error(ProvisioningError::JobNotActive(job(7)));
}

#[test]
fn commands_on_a_vm_never_requested_are_refused() {
    Given::with(())
        .given_no_previous_events()
        .when(ProvisioningCommand::StartJob {
            job_id: job(1),
            runner: "local".into(),
        })
        .then_expect_error(ProvisioningError::NotFound);
    Given::with(())
        .given_no_previous_events()
        .when(ProvisioningCommand::RequestDestroy)
        .then_expect_error(ProvisioningError::NotFound);
}

#[test]
fn log_lines_are_recorded_in_order_and_redelivered_lines_are_dropped() {
    Given::with(())
        .given([applying(), vec![log_event(1, "a")]].concat())
        .when(ProvisioningCommand::RecordLogs {
            job_id: job(1),
            lines: vec![line(3, "c"), line(1, "a"), line(2, "b"), line(2, "b")],
        })
        .then_expect_events(vec![log_event(2, "b"), log_event(3, "c")]);
}

#[test]
fn a_batch_that_skips_a_line_is_refused_until_the_line_is_there() {
    let given = [applying(), vec![log_event(1, "a")]].concat();
    let refused = Given::with(())
        .given(given.clone())
        .when(ProvisioningCommand::RecordLogs {
            job_id: job(1),
            lines: vec![line(3, "c")],
        })
        .inspect_result()
        .unwrap_err();
    assert!(refused.is_retryable());
    Given::with(())
        .given(given)
        .when(ProvisioningCommand::RecordLogs {
            job_id: job(1),
            lines: vec![line(2, "b"), line(4, "d")],
        })
        .then_expect_error(ProvisioningError::LineGap {
            job_id: job(1),
            expected: 3,
            got: 4,
        });
}

#[test]
fn a_result_that_overtook_its_lines_waits_for_them() {
    let mut result = outcome(0, outputs_with_ip());
    result.lines = 2;
    Given::with(())
        .given([applying(), vec![log_event(1, "a")]].concat())
        .when(finish(1, result.clone()))
        .then_expect_error(ProvisioningError::LinesMissing {
            job_id: job(1),
            reported: 2,
            recorded: 1,
        });
    Given::with(())
        .given([applying(), vec![log_event(1, "a"), log_event(2, "b")]].concat())
        .when(finish(1, result))
        .then_expect_events(vec![applied()]);
}

#[test]
fn log_lines_of_a_finished_job_are_refused() {
    Given::with(())
        .given(provisioned())
        .when(ProvisioningCommand::RecordLogs {
            job_id: job(1),
            lines: vec![line(9, "late")],
        })
        .then_expect_error(ProvisioningError::JobNotActive(job(1)));
}

#[test]
fn a_successful_apply_records_the_ip_from_the_outputs() {
    Given::with(())
        .given(applying())
        .when(finish(1, outcome(0, outputs_with_ip())))
        .then_expect_events(vec![applied()]);
}

#[test]
fn an_apply_without_a_vm_ip_output_fails() {
    Given::with(())
        .given(applying())
        .when(finish(1, outcome(0, BTreeMap::new())))
        .then_expect_events(vec![ProvisioningEvent::Failed {
            job_id: job(1),
            action: JobAction::Create,
            reason: "terraform succeeded but gave no vm_ip output".into(),
            diagnostics: vec![],
            exit_code: Some(0),
            forced: false,
        }]);
}

#[test]
fn a_failed_apply_gives_terraforms_error_diagnostic_as_the_reason() {
    let diagnostic = Diagnostic {
        severity: Severity::Error,
        summary: "Invalid value for variable".into(),
        detail: "flavor_name must be one of local.small".into(),
    };
    let warning = Diagnostic {
        severity: Severity::Warning,
        summary: "Deprecated".into(),
        detail: String::new(),
    };
    let result = JobOutcome {
        exit_code: 1,
        // the exit code decides, even when outputs look like success
        outputs: outputs_with_ip(),
        diagnostics: vec![warning.clone(), diagnostic.clone()],
        lines: 0,
        drift: vec![],
    };
    Given::with(())
        .given(applying())
        .when(finish(1, result))
        .then_expect_events(vec![ProvisioningEvent::Failed {
            job_id: job(1),
            action: JobAction::Create,
            reason: "Invalid value for variable: flavor_name must be one of local.small".into(),
            diagnostics: vec![warning, diagnostic],
            exit_code: Some(1),
            forced: false,
        }]);
}

#[test]
fn a_failed_job_without_diagnostics_names_the_exit_code() {
    Given::with(())
        .given(applying())
        .when(finish(1, outcome(2, BTreeMap::new())))
        .then_expect_events(vec![ProvisioningEvent::Failed {
            job_id: job(1),
            action: JobAction::Create,
            reason: "terraform exited with code 2".into(),
            diagnostics: vec![],
            exit_code: Some(2),
            forced: false,
        }]);
}

#[test]
fn destroying_an_idle_vm_queues_the_destroy_job_at_once() {
    Given::with(())
        .given(provisioned())
        .when(ProvisioningCommand::RequestDestroy)
        .then_expect_events(vec![
            ProvisioningEvent::DestroyRequested,
            queued(2, JobAction::Destroy),
        ]);
}

#[test]
fn destroying_a_vm_with_a_running_job_waits_behind_that_job() {
    let waiting = ProvisioningEvent::JobRequested {
        job_id: job(2),
        action: JobAction::Destroy,
    };
    Given::with(())
        .given(applying())
        .when(ProvisioningCommand::RequestDestroy)
        .then_expect_events(vec![ProvisioningEvent::DestroyRequested, waiting.clone()]);
    Given::with(())
        .given(
            [
                applying(),
                vec![ProvisioningEvent::DestroyRequested, waiting],
            ]
            .concat(),
        )
        .when(finish(1, outcome(0, outputs_with_ip())))
        .then_expect_events(vec![applied(), queued(2, JobAction::Destroy)]);
}

#[test]
fn a_destroy_pending_in_an_earlier_versions_history_is_queued_when_the_job_ends() {
    Given::with(())
        .given([applying(), vec![ProvisioningEvent::DestroyRequested]].concat())
        .when(finish(1, outcome(0, outputs_with_ip())))
        .then_expect_events(vec![applied(), queued(2, JobAction::Destroy)]);
}

#[test]
fn a_second_destroy_while_one_waits_changes_nothing_and_one_that_runs_is_refused() {
    Given::with(())
        .given([applying(), vec![ProvisioningEvent::DestroyRequested]].concat())
        .when(ProvisioningCommand::RequestDestroy)
        .then_expect_events(vec![]);
    Given::with(())
        .given(destroying())
        .when(ProvisioningCommand::RequestDestroy)
        .then_expect_error(ProvisioningError::AlreadyDestroying(VmStatus::Destroying));
}

#[test]
fn a_successful_destroy_job_destroys_the_vm_for_good() {
    Given::with(())
        .given(destroying())
        .when(finish(2, outcome(0, BTreeMap::new())))
        .then_expect_events(vec![ProvisioningEvent::Destroyed { job_id: job(2) }]);
    Given::with(())
        .given(
            [
                destroying(),
                vec![ProvisioningEvent::Destroyed { job_id: job(2) }],
            ]
            .concat(),
        )
        .when(ProvisioningCommand::RequestDestroy)
        .then_expect_error(ProvisioningError::AlreadyDestroying(VmStatus::Destroyed));
}

#[test]
fn a_failed_destroy_can_be_retried() {
    let failed = ProvisioningEvent::Failed {
        job_id: job(2),
        action: JobAction::Destroy,
        reason: "boom".into(),
        diagnostics: vec![],
        exit_code: Some(1),
        forced: false,
    };
    Given::with(())
        .given([destroying(), vec![failed]].concat())
        .when(ProvisioningCommand::RequestDestroy)
        .then_expect_events(vec![
            ProvisioningEvent::DestroyRequested,
            queued(3, JobAction::Destroy),
        ]);
}

#[test]
fn the_status_follows_the_jobs() {
    let mut vm = Provisioning::default();
    let mut statuses = vec![];
    for event in destroying() {
        vm.apply(event);
        statuses.push(vm.status().as_str());
    }
    assert_eq!(
        statuses,
        [
            "requested",
            "requested",
            "provisioning",
            "provisioned",
            "destroy_requested",
            "destroy_requested",
            "destroying"
        ]
    );
}

fn claim(n: u32, by: &str) -> ProvisioningCommand {
    ProvisioningCommand::ClaimJob {
        job_id: job(n),
        dispatcher: by.into(),
    }
}

#[test]
fn a_queued_job_is_claimed_once() {
    let dispatched = ProvisioningEvent::JobDispatched {
        job_id: job(1),
        dispatcher: "a".into(),
    };
    Given::with(())
        .given(requested())
        .when(claim(1, "a"))
        .then_expect_events(vec![dispatched.clone()]);
    let mut after = requested();
    after.push(dispatched);
    Given::with(())
        .given(after)
        .when(claim(1, "b"))
        .then_expect_error(ProvisioningError::JobTaken(job(1)));
    Given::with(())
        .given(applying())
        .when(claim(1, "b"))
        .then_expect_error(ProvisioningError::JobTaken(job(1)));
    Given::with(())
        .given(provisioned())
        .when(claim(1, "b"))
        .then_expect_error(ProvisioningError::JobNotActive(job(1)));
}
