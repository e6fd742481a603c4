//! The cluster's state transitions: each command's checks and the events it records. A
//! command already reflected in the state records nothing, so a coordinator that repeats
//! one after a restart changes nothing. (A part of the aggregate, apart for size.)

use time::OffsetDateTime;

use super::{Cluster, Requested};
use crate::cluster::error::ClusterError;
use crate::cluster::events::ClusterEvent;
use crate::cluster::topology::GateId;
use crate::cluster::values::RoleName;
use crate::cluster::views::ClusterStatus;
use crate::provisioning::VmId;

type Decided = Result<Vec<ClusterEvent>, ClusterError>;

impl Cluster {
    pub(super) fn request(&self, asked: Requested) -> Decided {
        if self.requested.is_some() {
            return Err(ClusterError::AlreadyRequested);
        }
        asked.topology.validate()?;
        let Requested {
            id,
            template,
            topology,
            nodes,
            provider,
            owner,
            at,
        } = asked;
        Ok(vec![ClusterEvent::ClusterRequested {
            id,
            template,
            topology,
            nodes,
            provider,
            owner,
            at,
        }])
    }

    pub(super) fn record_node(
        &self,
        role: RoleName,
        index: u32,
        vm: VmId,
        at: OffsetDateTime,
    ) -> Decided {
        let requested = self.existing()?;
        self.allow(
            &[
                ClusterStatus::Requested,
                ClusterStatus::Creating,
                ClusterStatus::Ready,
            ],
            "record a node",
        )?;
        let topology = &requested.topology;
        let spec = topology
            .role(&role)
            .ok_or_else(|| ClusterError::UnknownRole(role.clone()))?;
        if index >= spec.count {
            return Err(ClusterError::UnknownNode { role, index });
        }
        let reached = topology
            .stage_of(&role)
            .is_some_and(|s| s < self.stages_reached());
        if !reached {
            return Err(ClusterError::StageNotReached { role });
        }
        if self.node(&role, index).is_some_and(|n| n.vm == vm) {
            return Ok(vec![]);
        }
        let generation = self.generation(&role, index);
        let expected = requested.id.node_vm(&role, index, generation);
        if self.node(&role, index).is_some() || vm != expected {
            let expected = self.place_vm(&role, index).unwrap_or(expected);
            return Err(ClusterError::WrongVm {
                role,
                index,
                expected,
                got: vm,
            });
        }
        Ok(vec![ClusterEvent::NodeRequested {
            role,
            index,
            generation,
            vm,
            at,
        }])
    }

    pub(super) fn pass_gate(&self, gate: GateId) -> Decided {
        let stage = self.gate_to_decide(&gate)?;
        if self.gate_passed(&gate) {
            return Ok(vec![]);
        }
        if self.gate_failure(&gate).is_some() {
            return Err(ClusterError::GateDecided(gate));
        }
        Ok(vec![ClusterEvent::GatePassed { stage, gate }])
    }

    pub(super) fn fail_gate(&self, gate: GateId, why: String) -> Decided {
        let stage = self.gate_to_decide(&gate)?;
        if self.gate_failure(&gate).is_some() {
            return Ok(vec![]);
        }
        if self.gate_passed(&gate) {
            return Err(ClusterError::GateDecided(gate));
        }
        Ok(vec![ClusterEvent::GateFailed { stage, gate, why }])
    }

    pub(super) fn mark_ready(&self) -> Decided {
        let requested = self.existing()?;
        if self.status == ClusterStatus::Ready {
            return Ok(vec![]);
        }
        self.allow(
            &[ClusterStatus::Requested, ClusterStatus::Creating],
            "become ready",
        )?;
        let topology = &requested.topology;
        let all_made = topology
            .roles
            .iter()
            .all(|r| (0..r.count).all(|i| self.node(&r.name, i).is_some()));
        let all_passed = topology.gates.iter().all(|g| self.gate_passed(&g.id()));
        if !all_made || !all_passed || self.failure.is_some() {
            return Err(ClusterError::NotComplete);
        }
        Ok(vec![ClusterEvent::ClusterReady])
    }

    /// Failing is for a cluster being made or rolled back, or a ready one whose scale
    /// failed (a node it added failed).
    pub(super) fn fail(&self, why: String) -> Decided {
        self.existing()?;
        if self.status == ClusterStatus::Failed {
            return Ok(vec![]);
        }
        if self.status == ClusterStatus::Ready && !self.scaling.is_empty() {
            return Ok(vec![ClusterEvent::ClusterFailed { why }]);
        }
        self.allow(
            &[
                ClusterStatus::Requested,
                ClusterStatus::Creating,
                ClusterStatus::RollingBack,
            ],
            "fail",
        )?;
        Ok(vec![ClusterEvent::ClusterFailed { why }])
    }

    pub(super) fn start_rollback(&self, why: String) -> Decided {
        self.existing()?;
        if self.status == ClusterStatus::RollingBack {
            return Ok(vec![]);
        }
        self.allow(
            &[ClusterStatus::Requested, ClusterStatus::Creating],
            "roll back",
        )?;
        Ok(vec![ClusterEvent::RollbackStarted { why }])
    }

    /// Allowed whatever the cluster is doing, a rollback included (destroying takes over:
    /// the same nodes go, and the cluster ends destroyed rather than failed).
    pub(super) fn request_destroy(&self) -> Decided {
        self.existing()?;
        match self.status {
            ClusterStatus::Destroying => Ok(vec![]),
            ClusterStatus::Destroyed => Err(self.invalid("be destroyed")),
            _ => Ok(vec![ClusterEvent::ClusterDestroyRequested]),
        }
    }

    pub(super) fn mark_destroyed(&self) -> Decided {
        self.existing()?;
        if self.status == ClusterStatus::Destroyed {
            return Ok(vec![]);
        }
        self.allow(&[ClusterStatus::Destroying], "be marked destroyed")?;
        Ok(vec![ClusterEvent::ClusterDestroyed])
    }

    /// Scaling changes a ready cluster only: while it is made, its gates decide.
    pub(super) fn scale(&self, role: RoleName, count: u32) -> Decided {
        let requested = self.existing()?;
        self.allow(&[ClusterStatus::Ready], "scale")?;
        let spec = requested
            .topology
            .role(&role)
            .ok_or_else(|| ClusterError::UnknownRole(role.clone()))?;
        if count < spec.min || count > spec.max {
            return Err(ClusterError::OutOfRange {
                role,
                count,
                min: spec.min,
                max: spec.max,
            });
        }
        if count == spec.count {
            return Ok(vec![]);
        }
        Ok(vec![ClusterEvent::ScaleRequested { role, count }])
    }

    pub(super) fn replace_node(&self, role: RoleName, index: u32) -> Decided {
        let requested = self.existing()?;
        self.allow(&[ClusterStatus::Ready], "replace a node")?;
        let Some(old) = self.node(&role, index) else {
            return Err(ClusterError::UnknownNode { role, index });
        };
        let new_vm = requested
            .id
            .node_vm(&role, index, self.generation(&role, index));
        Ok(vec![ClusterEvent::NodeReplaced {
            role,
            index,
            old_vm: old.vm,
            new_vm,
        }])
    }

    /// A VM already removed (or never retired) records nothing.
    pub(super) fn remove_node(&self, vm: VmId) -> Decided {
        self.existing()?;
        if self.nodes.iter().any(|n| n.vm == vm) {
            return Err(ClusterError::InUse(vm));
        }
        Ok(self
            .retired
            .iter()
            .find(|n| n.vm == vm)
            .map(|n| ClusterEvent::NodeRemoved {
                role: n.role.clone(),
                index: n.index,
                vm,
            })
            .into_iter()
            .collect())
    }

    /// A scale already completed, or replaced by a later one of its role, records nothing.
    pub(super) fn complete_scale(&self, role: RoleName, count: u32) -> Decided {
        self.existing()?;
        let Some(scale) = self
            .scaling
            .iter()
            .find(|s| s.role == role && s.to == count)
        else {
            return Ok(vec![]);
        };
        self.allow(&[ClusterStatus::Ready], "complete a scale")?;
        let done = match scale.to > scale.from {
            true => (scale.from..scale.to).all(|i| self.node(&role, i).is_some()),
            false => !self
                .retired
                .iter()
                .any(|n| n.role == role && n.index >= count),
        };
        if !done {
            return Err(ClusterError::NotComplete);
        }
        Ok(vec![ClusterEvent::ScaleCompleted { role, count }])
    }

    /// The stage of a gate that may be decided now: the cluster is being made, the gate's
    /// stage is reached and each node of its role is requested.
    fn gate_to_decide(&self, gate: &GateId) -> Result<u32, ClusterError> {
        let requested = self.existing()?;
        self.allow(&[ClusterStatus::Creating], "decide a gate")?;
        let topology = &requested.topology;
        let spec = topology
            .gate(gate)
            .ok_or_else(|| ClusterError::UnknownGate(gate.clone()))?;
        let stage = topology.stage_of(&spec.role).unwrap_or(usize::MAX);
        let count = topology.role(&spec.role).map_or(0, |r| r.count);
        let made = (0..count).all(|i| self.node(&spec.role, i).is_some());
        if stage >= self.stages_reached() || !made {
            return Err(ClusterError::StageNotReached {
                role: spec.role.clone(),
            });
        }
        Ok(u32::try_from(stage).unwrap_or(u32::MAX))
    }

    fn existing(&self) -> Result<&Requested, ClusterError> {
        self.requested.as_ref().ok_or(ClusterError::NotFound)
    }

    fn allow(&self, statuses: &[ClusterStatus], action: &'static str) -> Result<(), ClusterError> {
        match statuses.contains(&self.status) {
            true => Ok(()),
            false => Err(self.invalid(action)),
        }
    }

    fn invalid(&self, action: &'static str) -> ClusterError {
        ClusterError::InvalidTransition {
            status: self.status,
            action,
        }
    }
}
