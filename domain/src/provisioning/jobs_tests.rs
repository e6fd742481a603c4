//! The job state machine: the queue per VM, cancel and force-cancel, deadlines, retry and
//! refresh, as given / when / then.

use std::collections::BTreeMap;
use std::time::Duration;

use cqrs_es::Aggregate;
use time::OffsetDateTime;

use super::tests::*;
use super::*;
use crate::provisioning::JobState;

fn at(secs: i64) -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp(1_800_000_000 + secs).unwrap()
}

fn waiting(n: u32, action: JobAction) -> ProvisioningEvent {
    ProvisioningEvent::JobRequested {
        job_id: job(n),
        action,
    }
}

fn cancel(n: u32, secs: i64) -> ProvisioningCommand {
    ProvisioningCommand::CancelJob {
        job_id: job(n),
        reason: "cancelled by admin".into(),
        at: at(secs),
        deadline: false,
    }
}

fn cancel_requested(n: u32, secs: i64, deadline: bool) -> ProvisioningEvent {
    ProvisioningEvent::JobCancelRequested {
        job_id: job(n),
        reason: match deadline {
            true => "the create job ran past its deadline of 60 s".into(),
            false => "cancelled by admin".into(),
        },
        at: at(secs),
        deadline,
    }
}

fn force(n: u32, secs: i64) -> ProvisioningCommand {
    ProvisioningCommand::ForceCancelJob {
        job_id: job(n),
        at: at(secs),
        cool_off: Duration::from_secs(10),
    }
}

fn cancelled(n: u32, action: JobAction, exit_code: Option<i32>, forced: bool) -> ProvisioningEvent {
    ProvisioningEvent::JobCancelled {
        job_id: job(n),
        action,
        reason: match forced {
            true => {
                "cancelled by admin; it did not stop within 10 s of its cancel and was forced off"
                    .into()
            }
            false => "cancelled by admin".into(),
        },
        exit_code,
        forced,
    }
}

fn failed_create() -> Vec<ProvisioningEvent> {
    let failed = ProvisioningEvent::Failed {
        job_id: job(1),
        action: JobAction::Create,
        reason: "boom".into(),
        diagnostics: vec![],
        exit_code: Some(1),
        forced: false,
    };
    [applying(), vec![failed]].concat()
}

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

fn outputs(ip: &str) -> BTreeMap<String, serde_json::Value> {
    BTreeMap::from([("vm_ip".to_owned(), serde_json::json!(ip))])
}

#[test]
fn three_requests_run_one_at_a_time_in_the_order_they_were_asked() {
    Given::with(())
        .given(applying())
        .when(ProvisioningCommand::Refresh)
        .then_expect_events(vec![waiting(2, JobAction::Refresh)]);
    let all_asked = [
        applying(),
        vec![
            waiting(2, JobAction::Refresh),
            ProvisioningEvent::DestroyRequested,
            waiting(3, JobAction::Destroy),
        ],
    ]
    .concat();
    Given::with(())
        .given(all_asked.clone())
        .when(finish(1, outcome(0, outputs_with_ip())))
        .then_expect_events(vec![applied(), queued(2, JobAction::Refresh)]);
    let refreshed = ProvisioningEvent::Refreshed {
        job_id: job(2),
        outputs: outputs_with_ip(),
    };
    let refresh_running = [
        all_asked,
        vec![
            applied(),
            queued(2, JobAction::Refresh),
            started(2, JobAction::Refresh),
        ],
    ]
    .concat();
    Given::with(())
        .given(refresh_running)
        .when(finish(2, outcome(0, outputs_with_ip())))
        .then_expect_events(vec![refreshed, queued(3, JobAction::Destroy)]);
}

#[test]
fn a_second_identical_request_while_one_waits_is_the_same_request() {
    Given::with(())
        .given([applying(), vec![waiting(2, JobAction::Refresh)]].concat())
        .when(ProvisioningCommand::Refresh)
        .then_expect_events(vec![]);
    Given::with(())
        .given([provisioned(), vec![queued(2, JobAction::Refresh)]].concat())
        .when(ProvisioningCommand::Refresh)
        .then_expect_events(vec![]);
    // One that runs already is not the same: a refresh asked now reads what comes after.
    Given::with(())
        .given(refreshing())
        .when(ProvisioningCommand::Refresh)
        .then_expect_events(vec![waiting(3, JobAction::Refresh)]);
}

#[test]
fn a_waiting_job_is_cancelled_at_once() {
    Given::with(())
        .given([applying(), vec![waiting(2, JobAction::Refresh)]].concat())
        .when(cancel(2, 0))
        .then_expect_events(vec![cancelled(2, JobAction::Refresh, None, false)]);
}

#[test]
fn a_job_queued_for_a_runner_is_cancelled_at_once_and_the_next_one_runs() {
    let given = [
        provisioned(),
        vec![
            queued(2, JobAction::Refresh),
            ProvisioningEvent::DestroyRequested,
            waiting(3, JobAction::Destroy),
        ],
    ]
    .concat();
    Given::with(())
        .given(given)
        .when(cancel(2, 0))
        .then_expect_events(vec![
            cancelled(2, JobAction::Refresh, None, false),
            queued(3, JobAction::Destroy),
        ]);
}

#[test]
fn a_running_job_is_asked_to_stop_once() {
    Given::with(())
        .given(applying())
        .when(cancel(1, 0))
        .then_expect_events(vec![cancel_requested(1, 0, false)]);
    Given::with(())
        .given([applying(), vec![cancel_requested(1, 0, false)]].concat())
        .when(cancel(1, 5))
        .then_expect_events(vec![]);
}

#[test]
fn a_cancelled_job_whose_terraform_stopped_ends_cancelled_and_one_that_finished_succeeded() {
    let asked = [applying(), vec![cancel_requested(1, 0, false)]].concat();
    Given::with(())
        .given(asked.clone())
        .when(finish(1, outcome(130, BTreeMap::new())))
        .then_expect_events(vec![cancelled(1, JobAction::Create, Some(130), false)]);
    Given::with(())
        .given(asked)
        .when(finish(1, outcome(0, outputs_with_ip())))
        .then_expect_events(vec![applied()]);
}

#[test]
fn a_job_cancelled_for_its_deadline_ends_failed_with_the_reason() {
    Given::with(())
        .given([applying(), vec![cancel_requested(1, 0, true)]].concat())
        .when(finish(1, outcome(1, BTreeMap::new())))
        .then_expect_events(vec![ProvisioningEvent::Failed {
            job_id: job(1),
            action: JobAction::Create,
            reason: "the create job ran past its deadline of 60 s".into(),
            diagnostics: vec![],
            exit_code: Some(1),
            forced: false,
        }]);
}

#[test]
fn force_cancel_needs_a_cancel_and_the_cool_off_first() {
    Given::with(())
        .given(applying())
        .when(force(1, 100))
        .then_expect_error(ProvisioningError::CancelFirst(job(1)));
    let asked = [applying(), vec![cancel_requested(1, 0, false)]].concat();
    Given::with(())
        .given(asked.clone())
        .when(force(1, 4))
        .then_expect_error(ProvisioningError::CoolingOff {
            job_id: job(1),
            elapsed: 4,
            cool_off: 10,
        });
    Given::with(())
        .given([asked, vec![waiting(2, JobAction::Destroy)]].concat())
        .when(force(1, 10))
        .then_expect_events(vec![
            cancelled(1, JobAction::Create, None, true),
            queued(2, JobAction::Destroy),
        ]);
}

#[test]
fn a_job_forced_off_past_its_deadline_ends_failed() {
    let events = Given::with(())
        .given([applying(), vec![cancel_requested(1, 0, true)]].concat())
        .when(force(1, 30))
        .inspect_result()
        .unwrap();
    assert!(matches!(
        events.as_slice(),
        [ProvisioningEvent::Failed { forced: true, exit_code: None, reason, .. }]
            if reason.starts_with("the create job ran past its deadline")
    ));
}

#[test]
fn cancelling_a_finished_job_is_refused_and_an_unknown_job_does_not_exist() {
    Given::with(())
        .given(provisioned())
        .when(cancel(1, 0))
        .then_expect_error(ProvisioningError::JobFinished(job(1), JobState::Succeeded));
    Given::with(())
        .given(provisioned())
        .when(force(1, 0))
        .then_expect_error(ProvisioningError::JobFinished(job(1), JobState::Succeeded));
    Given::with(())
        .given(provisioned())
        .when(cancel(9, 0))
        .then_expect_error(ProvisioningError::NoSuchJob(job(9)));
}

#[test]
fn a_failed_create_is_retried_once_and_nothing_else_is() {
    Given::with(())
        .given(failed_create())
        .when(ProvisioningCommand::Retry)
        .then_expect_events(vec![queued(2, JobAction::Create)]);
    Given::with(())
        .given([failed_create(), vec![queued(2, JobAction::Create)]].concat())
        .when(ProvisioningCommand::Retry)
        .then_expect_events(vec![]);
    Given::with(())
        .given(provisioned())
        .when(ProvisioningCommand::Retry)
        .then_expect_error(ProvisioningError::NothingToRetry);
    Given::with(())
        .given(applying())
        .when(ProvisioningCommand::Retry)
        .then_expect_error(ProvisioningError::NothingToRetry);
}

#[test]
fn a_cancelled_create_can_be_retried() {
    let given = [
        applying(),
        vec![
            cancel_requested(1, 0, false),
            cancelled(1, JobAction::Create, Some(130), false),
        ],
    ]
    .concat();
    Given::with(())
        .given(given)
        .when(ProvisioningCommand::Retry)
        .then_expect_events(vec![queued(2, JobAction::Create)]);
}

#[test]
fn a_refresh_that_finds_another_address_records_it() {
    Given::with(())
        .given(refreshing())
        .when(finish(2, outcome(0, outputs("10.77.0.10"))))
        .then_expect_events(vec![
            ProvisioningEvent::Refreshed {
                job_id: job(2),
                outputs: outputs("10.77.0.10"),
            },
            ProvisioningEvent::IpChanged {
                job_id: job(2),
                vm_ip: "10.77.0.10".into(),
            },
        ]);
    Given::with(())
        .given(refreshing())
        .when(finish(2, outcome(0, outputs_with_ip())))
        .then_expect_events(vec![ProvisioningEvent::Refreshed {
            job_id: job(2),
            outputs: outputs_with_ip(),
        }]);
}

#[test]
fn a_vm_to_be_destroyed_is_not_refreshed() {
    Given::with(())
        .given(
            [
                provisioned(),
                vec![
                    ProvisioningEvent::DestroyRequested,
                    queued(2, JobAction::Destroy),
                ],
            ]
            .concat(),
        )
        .when(ProvisioningCommand::Refresh)
        .then_expect_error(ProvisioningError::CannotRefresh(VmStatus::DestroyRequested));
}

#[test]
fn the_status_shows_the_outcome_and_the_jobs_to_come() {
    let mut vm = Provisioning::default();
    for event in refreshing() {
        vm.apply(event);
    }
    assert_eq!(
        vm.status(),
        VmStatus::Provisioned,
        "a refresh leaves the status"
    );
    let failed_refresh = ProvisioningEvent::Failed {
        job_id: job(2),
        action: JobAction::Refresh,
        reason: "the cloud did not answer".into(),
        diagnostics: vec![],
        exit_code: Some(1),
        forced: false,
    };
    vm.apply(failed_refresh);
    assert_eq!(vm.status(), VmStatus::Provisioned);
    assert_eq!(
        vm.lifecycle().last_error.as_deref(),
        Some("the cloud did not answer")
    );

    let mut vm = Provisioning::default();
    for event in [
        applying(),
        vec![
            ProvisioningEvent::DestroyRequested,
            waiting(2, JobAction::Destroy),
        ],
    ]
    .concat()
    {
        vm.apply(event);
    }
    assert_eq!(vm.status(), VmStatus::DestroyRequested);
    vm.apply(cancelled(2, JobAction::Destroy, None, false));
    assert_eq!(
        vm.status(),
        VmStatus::Provisioning,
        "the create runs on once the destroy behind it is cancelled"
    );
    vm.apply(cancel_requested(1, 0, false));
    vm.apply(cancelled(1, JobAction::Create, Some(130), false));
    assert_eq!(vm.status(), VmStatus::Failed);
    assert_eq!(vm.lifecycle().retryable(), Some(JobAction::Create));
}

#[test]
fn a_claimed_job_whose_runner_never_started_is_queued_again_once() {
    let dispatched = ProvisioningEvent::JobDispatched {
        job_id: job(1),
        dispatcher: "gone".into(),
    };
    let claimed = [requested(), vec![dispatched]].concat();
    Given::with(())
        .given(claimed.clone())
        .when(ProvisioningCommand::RequeueJob { job_id: job(1) })
        .then_expect_events(vec![queued(1, JobAction::Create)]);
    Given::with(())
        .given([claimed, vec![queued(1, JobAction::Create)]].concat())
        .when(ProvisioningCommand::RequeueJob { job_id: job(1) })
        .then_expect_error(ProvisioningError::JobTaken(job(1)));
    Given::with(())
        .given(applying())
        .when(ProvisioningCommand::RequeueJob { job_id: job(1) })
        .then_expect_error(ProvisioningError::JobTaken(job(1)));
}

#[test]
fn a_claimed_job_cancelled_before_its_runner_started_ends_cancelled_instead_of_queued_again() {
    let dispatched = ProvisioningEvent::JobDispatched {
        job_id: job(1),
        dispatcher: "gone".into(),
    };
    Given::with(())
        .given([requested(), vec![dispatched, cancel_requested(1, 0, false)]].concat())
        .when(ProvisioningCommand::RequeueJob { job_id: job(1) })
        .then_expect_events(vec![cancelled(1, JobAction::Create, None, false)]);
}
