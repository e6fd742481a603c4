//! The VM read model: what `GET /api/v1/vms/{id}` shows. Folded from events by the
//! projector; rebuilding it from the events table gives the same rows.

use serde::{Deserialize, Serialize};

use super::events::ProvisioningEvent;
use super::lifecycle::Lifecycle;
use super::values::VmSpec;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct VmView {
    pub spec: Option<VmSpec>,
    pub lifecycle: Lifecycle,
    /// The aggregate sequence of the last event folded in; older events are skipped.
    pub last_sequence: u64,
}

impl VmView {
    /// Folds one event in. Returns false, changing nothing, for an event already folded.
    pub fn update(&mut self, sequence: u64, event: &ProvisioningEvent) -> bool {
        if sequence <= self.last_sequence {
            return false;
        }
        self.last_sequence = sequence;
        self.lifecycle.apply(event);
        if let ProvisioningEvent::Requested { spec } = event {
            self.spec = Some(spec.clone());
        }
        true
    }
}
