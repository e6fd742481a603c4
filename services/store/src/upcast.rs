//! Schema versions of stored events, and the upcasters that read an older version into
//! today's type. Every path that loads events goes through [`upcast`]: the command path
//! (`command.rs`, `together.rs`), the feed (relay, projector, replay, dead letters) and
//! the fold of a VM's view at a past point (`views::view_at`). The audit history shows
//! events as stored, with their version.
//!
//! The versions (each event's `event_version` column, what `DomainEvent::event_version`
//! says):
//! - `Provisioning` 1.0: the first. 1.1: `AddressChanged` is named `IpChanged`; a 1.0
//!   `AddressChanged` is upcast to it (it was read by a serde alias before).
//!   (`Requested` without `expires_at` and `Failed` without `exit_code` are read by serde
//!   defaults: those fields are optional in today's type, no upcaster needed.)
//! - `Catalog` 1.0.

use std::sync::OnceLock;

use cqrs_es::persist::{EventUpcaster, SemanticVersionEventUpcaster, SerializedEvent};
use serde_json::Value;

fn upcasters() -> &'static [Box<dyn EventUpcaster>] {
    static UPCASTERS: OnceLock<Vec<Box<dyn EventUpcaster>>> = OnceLock::new();
    UPCASTERS.get_or_init(|| {
        vec![Box::new(SemanticVersionEventUpcaster::new(
            "AddressChanged",
            "1.1",
            Box::new(|mut payload: Value| {
                payload["type"] = Value::from("IpChanged");
                payload
            }),
        ))]
    })
}

/// The stored payload `payload` of an event of `event_type` stored in `event_version`, in
/// today's shape (`{"type": .., "data": ..}`), ready for `serde_json::from_value`.
pub fn upcast(event_type: &str, event_version: &str, payload: Value) -> Value {
    let upcasters = upcasters();
    if !upcasters
        .iter()
        .any(|u| u.can_upcast(event_type, event_version))
    {
        return payload;
    }
    let mut event = SerializedEvent {
        aggregate_id: String::new(),
        sequence: 0,
        aggregate_type: String::new(),
        event_type: event_type.to_owned(),
        event_version: event_version.to_owned(),
        payload,
        metadata: Value::Null,
    };
    for upcaster in upcasters {
        if upcaster.can_upcast(&event.event_type, &event.event_version) {
            event = upcaster.upcast(event);
        }
    }
    event.payload
}

#[cfg(test)]
mod tests {
    use super::*;
    use domain::provisioning::ProvisioningEvent;
    use serde_json::json;

    #[test]
    fn an_address_changed_of_version_1_0_reads_as_today_s_ip_changed() {
        let stored = json!({"type": "AddressChanged", "data": {"job_id": 3, "vm_ip": "10.0.0.9"}});
        // Today's type has no name for it any more: without the upcaster it is unreadable.
        assert!(serde_json::from_value::<ProvisioningEvent>(stored.clone()).is_err());
        let event: ProvisioningEvent =
            serde_json::from_value(upcast("AddressChanged", "1.0", stored)).unwrap();
        match event {
            ProvisioningEvent::IpChanged { job_id, vm_ip } => {
                assert_eq!((job_id.get(), vm_ip.as_str()), (3, "10.0.0.9"));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn events_of_today_s_version_pass_unchanged() {
        let stored = json!({"type": "IpChanged", "data": {"job_id": 3, "vm_ip": "10.0.0.9"}});
        assert_eq!(upcast("IpChanged", "1.1", stored.clone()), stored);
        assert_eq!(upcast("IpChanged", "1.0", stored.clone()), stored);
    }
}
