//! Taskservs of a VM, as given / when / then: the plan of its create reported by callback
//! (readiness waits for it, `on_error` decides about the rest), and installs on the
//! running VM as jobs whose runner reports each step.

use std::collections::BTreeMap;

use cqrs_es::Aggregate;

use super::tests::*;
use super::*;
use crate::provisioning::{BootReport, TaskservReport};
use crate::taskservs::{OnError, PlannedTaskserv, TaskservName, TaskservState};

fn step(name: &str, on_error: OnError) -> PlannedTaskserv {
    PlannedTaskserv {
        name: TaskservName::parse(name).unwrap(),
        version: "1.0.0".into(),
        params: BTreeMap::new(),
        on_error,
        max_retries: 0,
        requested: true,
    }
}

fn name(n: &str) -> TaskservName {
    TaskservName::parse(n).unwrap()
}

/// A VM requested with `plan`, made by job 1, booting.
fn booting(plan: Vec<PlannedTaskserv>) -> Vec<ProvisioningEvent> {
    let mut spec = spec();
    spec.taskservs = plan;
    let mut events = provisioned();
    if let ProvisioningEvent::Requested { spec: s, .. } = &mut events[0] {
        *s = spec;
    }
    events.push(ProvisioningEvent::BootStarted { job_id: job(1) });
    events
}

fn phoned_home() -> ProvisioningEvent {
    ProvisioningEvent::PhonedHome {
        job_id: job(1),
        hostname: "web-1".into(),
        host_keys: vec!["ssh-ed25519 AAAAC3Nza host".into()],
    }
}

fn report(n: u32, step: u8, report: TaskservReport) -> ProvisioningCommand {
    ProvisioningCommand::Callback {
        job_id: job(n),
        report: BootReport::Taskserv { step, report },
    }
}

fn installed(n: u32, taskserv: &str) -> ProvisioningEvent {
    ProvisioningEvent::TaskservInstalled {
        job_id: job(n),
        name: name(taskserv),
        version: "1.0.0".into(),
        outputs: BTreeMap::from([("url".to_owned(), "http://10.0.0.1:3000".to_owned())]),
    }
}

fn outputs() -> BTreeMap<String, String> {
    BTreeMap::from([("url".to_owned(), "http://10.0.0.1:3000".to_owned())])
}

fn lifecycle(events: &[ProvisioningEvent]) -> Lifecycle {
    let mut vm = Provisioning::default();
    for event in events {
        vm.apply(event.clone());
    }
    vm.lifecycle().clone()
}

fn states(life: &Lifecycle) -> Vec<&'static str> {
    life.taskservs.iter().map(|e| e.state.as_str()).collect()
}

#[test]
fn a_vm_that_phoned_home_is_running_only_once_its_taskservs_installed() {
    let plan = vec![
        step("docker", OnError::Stop),
        step("grafana", OnError::Stop),
    ];
    let up = [booting(plan), vec![phoned_home()]].concat();
    let life = lifecycle(&up);
    assert_eq!(life.status, VmStatus::Initializing);
    assert_eq!(states(&life), ["pending", "pending"]);
    assert_eq!(life.boot.unwrap().host_keys.len(), 1, "host keys kept");

    Given::with(())
        .given(up.clone())
        .when(report(1, 0, TaskservReport::Started))
        .then_expect_events(vec![ProvisioningEvent::TaskservStarted {
            job_id: job(1),
            name: name("docker"),
        }]);
    Given::with(())
        .given(up.clone())
        .when(report(
            1,
            0,
            TaskservReport::Installed { outputs: outputs() },
        ))
        .then_expect_events(vec![installed(1, "docker")]);
    let first = [up.clone(), vec![installed(1, "docker")]].concat();
    assert_eq!(lifecycle(&first).status, VmStatus::Initializing);
    let all = [first, vec![installed(1, "grafana")]].concat();
    let life = lifecycle(&all);
    assert_eq!(life.status, VmStatus::Running);
    assert_eq!(states(&life), ["installed", "installed"]);
}

#[test]
fn a_failing_taskserv_with_on_error_stop_skips_the_rest_and_continue_does_not() {
    let failed = |taskserv: &str| ProvisioningEvent::TaskservFailed {
        job_id: job(1),
        name: name(taskserv),
        exit_code: Some(3),
        last_lines: vec!["E: unable to locate package".into()],
    };
    let stop = [
        booting(vec![
            step("docker", OnError::Stop),
            step("grafana", OnError::Stop),
        ]),
        vec![phoned_home()],
    ]
    .concat();
    Given::with(())
        .given(stop.clone())
        .when(report(
            1,
            0,
            TaskservReport::Failed {
                exit_code: Some(3),
                last_lines: (0..30).map(|i| format!("line {i}")).collect(),
            },
        ))
        .then_expect_events(vec![ProvisioningEvent::TaskservFailed {
            job_id: job(1),
            name: name("docker"),
            exit_code: Some(3),
            last_lines: (10..30).map(|i| format!("line {i}")).collect(),
        }]);
    let life = lifecycle(&[stop, vec![failed("docker")]].concat());
    assert_eq!(states(&life), ["failed", "skipped"]);
    assert_eq!(life.status, VmStatus::Running, "up, with a failed taskserv");
    assert_eq!(
        life.last_error.as_deref(),
        Some("taskserv docker failed (exit code 3)")
    );

    let go_on = [
        booting(vec![
            step("docker", OnError::Continue),
            step("grafana", OnError::Stop),
        ]),
        vec![phoned_home(), failed("docker")],
    ]
    .concat();
    let life = lifecycle(&go_on);
    assert_eq!(states(&life), ["failed", "pending"]);
    assert_eq!(life.status, VmStatus::Initializing);
}

#[test]
fn each_taskserv_callback_is_single_use_and_names_a_planned_step() {
    let up = [
        booting(vec![step("docker", OnError::Stop)]),
        vec![phoned_home(), installed(1, "docker")],
    ]
    .concat();
    Given::with(())
        .given(up.clone())
        .when(report(1, 0, TaskservReport::Started))
        .then_expect_error(ProvisioningError::CallbackRefused(
            "taskserv docker is installed already".into(),
        ));
    Given::with(())
        .given(up)
        .when(report(1, 1, TaskservReport::Started))
        .then_expect_error(ProvisioningError::CallbackRefused(
            "job 1 has no taskserv step 1".into(),
        ));
}

#[test]
fn an_install_on_a_running_vm_queues_a_job_with_its_steps_and_its_runner_reports_them() {
    let running = [booting(vec![]), vec![phoned_home()]].concat();
    assert_eq!(lifecycle(&running).status, VmStatus::Running);
    let plan = vec![step("redis", OnError::Stop)];
    let mut spec = spec();
    spec.taskservs = plan.clone();
    Given::with(())
        .given(running.clone())
        .when(ProvisioningCommand::InstallTaskservs {
            taskservs: plan.clone(),
        })
        .then_expect_events(vec![
            ProvisioningEvent::TaskservsRequested {
                job_id: job(2),
                taskservs: plan.clone(),
            },
            ProvisioningEvent::JobQueued {
                job_id: job(2),
                action: JobAction::Install,
                spec,
            },
        ]);
    let installing = [
        running,
        vec![
            ProvisioningEvent::TaskservsRequested {
                job_id: job(2),
                taskservs: plan,
            },
            queued(2, JobAction::Install),
            started(2, JobAction::Install),
            installed(2, "redis"),
        ],
    ]
    .concat();
    // A report delivered twice changes nothing.
    Given::with(())
        .given(installing.clone())
        .when(ProvisioningCommand::ReportTaskserv {
            job_id: job(2),
            step: 0,
            report: TaskservReport::Installed { outputs: outputs() },
        })
        .then_expect_events(vec![]);
    Given::with(())
        .given(installing.clone())
        .when(finish(2, outcome(0, BTreeMap::new())))
        .then_expect_events(vec![ProvisioningEvent::InstallEnded { job_id: job(2) }]);
    let life = lifecycle(&installing);
    assert_eq!(
        life.status,
        VmStatus::Running,
        "an install leaves it running"
    );
    assert!(matches!(
        life.taskservs[0].state,
        TaskservState::Installed { .. }
    ));
}

#[test]
fn a_failed_install_leaves_the_vm_running_and_nothing_to_retry() {
    let running = [booting(vec![]), vec![phoned_home()]].concat();
    let failed = [
        running,
        vec![
            ProvisioningEvent::TaskservsRequested {
                job_id: job(2),
                taskservs: vec![step("redis", OnError::Stop), step("nginx", OnError::Stop)],
            },
            queued(2, JobAction::Install),
            ProvisioningEvent::Failed {
                job_id: job(2),
                action: JobAction::Install,
                reason: "ssh: connection refused".into(),
                diagnostics: vec![],
                exit_code: Some(255),
                forced: false,
            },
        ],
    ]
    .concat();
    let life = lifecycle(&failed);
    assert_eq!(life.status, VmStatus::Running);
    assert_eq!(states(&life), ["skipped", "skipped"]);
    assert_eq!(life.retryable(), None);
}

#[test]
fn taskservs_install_only_on_a_running_vm() {
    Given::with(())
        .given(provisioned())
        .when(ProvisioningCommand::InstallTaskservs {
            taskservs: vec![step("redis", OnError::Stop)],
        })
        .then_expect_error(ProvisioningError::CannotInstall(VmStatus::Provisioned));
}
