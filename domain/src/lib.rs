//! The domain of the provisioning platform: what a VM request is, which steps it goes
//! through and which transitions are legal. This crate does no I/O; services load and store
//! what it decides.

mod actor;
pub mod callbacks;
pub mod catalog;
pub mod cluster;
mod decide;
pub mod identity;
mod kind;
pub mod provisioning;
pub mod quota;
pub mod taskservs;

pub use actor::Actor;
pub use decide::Decide;
pub use kind::AggregateKind;
