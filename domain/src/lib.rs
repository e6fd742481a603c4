//! The domain of the provisioning platform: what a VM request is, which steps it goes
//! through and which transitions are legal. This crate does no I/O; services load and store
//! what it decides.

pub mod catalog;
pub mod provisioning;
