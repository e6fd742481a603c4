//! Archiving: only a destroyed VM, once; its history stays.

use super::tests::{provisioned, queued, requested, started, Given};
use super::*;
use crate::provisioning::{Stamp, VmView};

fn destroyed() -> Vec<ProvisioningEvent> {
    [
        provisioned(),
        vec![
            ProvisioningEvent::DestroyRequested,
            queued(2, JobAction::Destroy),
            started(2, JobAction::Destroy),
            ProvisioningEvent::Destroyed {
                job_id: JobId::new(2),
            },
        ],
    ]
    .concat()
}

#[test]
fn a_destroyed_vm_is_archived() {
    Given::with(())
        .given(destroyed())
        .when(ProvisioningCommand::Archive)
        .then_expect_events(vec![ProvisioningEvent::Archived]);
}

#[test]
fn archiving_an_archived_vm_again_records_nothing() {
    Given::with(())
        .given([destroyed(), vec![ProvisioningEvent::Archived]].concat())
        .when(ProvisioningCommand::Archive)
        .then_expect_events(vec![]);
}

#[test]
fn a_vm_not_destroyed_yet_cannot_be_archived() {
    Given::with(())
        .given(provisioned())
        .when(ProvisioningCommand::Archive)
        .then_expect_error(ProvisioningError::NotDestroyed(VmStatus::Provisioned));
    Given::with(())
        .given(requested())
        .when(ProvisioningCommand::Archive)
        .then_expect_error(ProvisioningError::NotDestroyed(VmStatus::Requested));
    let destroying = destroyed()[..destroyed().len() - 1].to_vec();
    Given::with(())
        .given(destroying)
        .when(ProvisioningCommand::Archive)
        .then_expect_error(ProvisioningError::NotDestroyed(VmStatus::Destroying));
}

#[test]
fn a_vm_never_requested_cannot_be_archived() {
    Given::with(())
        .given_no_previous_events()
        .when(ProvisioningCommand::Archive)
        .then_expect_error(ProvisioningError::NotFound);
}

#[test]
fn an_archived_vm_stays_destroyed_and_refuses_other_commands() {
    let archived = [destroyed(), vec![ProvisioningEvent::Archived]].concat();
    Given::with(())
        .given(archived.clone())
        .when(ProvisioningCommand::RequestDestroy)
        .then_expect_error(ProvisioningError::AlreadyDestroying(VmStatus::Destroyed));
    let mut vm = Provisioning::default();
    for event in archived {
        vm.apply(event);
    }
    assert_eq!(vm.status(), VmStatus::Destroyed);
    assert!(vm.archived());
}

#[test]
fn the_read_model_shows_the_vm_archived() {
    let at = time::OffsetDateTime::UNIX_EPOCH;
    let stamp = Stamp { at, actor: None };
    let mut view = VmView::default();
    for (sequence, event) in (1..).zip(destroyed()) {
        view.update(sequence, stamp, &event);
    }
    assert!(!view.archived);
    let sequence = view.last_sequence + 1;
    assert!(view.update(sequence, stamp, &ProvisioningEvent::Archived));
    assert!(view.archived);
    assert_eq!(view.lifecycle.status, VmStatus::Destroyed);
    // Views and snapshots stored before archiving existed read as not archived.
    let mut stored = serde_json::to_value(&view).unwrap();
    stored.as_object_mut().unwrap().remove("archived");
    let old: VmView = serde_json::from_value(stored).unwrap();
    assert!(!old.archived);
}
