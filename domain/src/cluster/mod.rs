//! One `Cluster` aggregate per cluster: several VMs made as one from a topology template,
//! stage by stage, with health gates between stages and a rollback on failure.
//!
//! The cluster's nodes are ordinary `Provisioning` aggregates whose ids the cluster
//! derives ([`ClusterId::node_vm`]). The cluster records what was asked and decided; the
//! [`coordinator`] decides, from the cluster and its nodes' VMs, what to do next. The
//! application runs it as a process manager over the commit-order feed: it creates or
//! destroys VMs through the VM use cases and sends the cluster's commands. Each decision
//! and each command is idempotent, so the process manager may be killed at any point and
//! resume without a duplicate node or a lost step.

mod aggregate;
mod commands;
pub mod coordinator;
mod error;
mod events;
#[cfg(test)]
mod fixtures;
mod topology;
mod values;
mod views;

pub use aggregate::{Cluster, Node, Requested, Scaling};
pub use commands::ClusterCommand;
pub use error::ClusterError;
pub use events::ClusterEvent;
pub use topology::{GateId, GateNodes, GateSpec, NodeSettings, OnFailure, RoleSpec, Topology};
pub use values::{ClusterId, ClusterMember, RoleName, TemplateRef};
pub use views::{ClusterStatus, ClusterView, GateState, GateView, RoleView};
