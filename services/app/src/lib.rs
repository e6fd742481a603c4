//! The application layer: the platform's use cases, one method of [`App`] each, shared by
//! every face (`/api/v1`, the NAIC face, the console, process managers). A use case takes
//! the [`Caller`] and typed, already-parsed input (the domain's value types) and returns its
//! result or an [`Error`]; mapping that to an answer (a status, a body) is each face's job,
//! so nothing here knows HTTP.
//!
//! Commands record the caller's actor and correlation id in their events' metadata, and the
//! position of their last event as the caller's last write ([`positions`]), so that the
//! caller's next read, through any face and on any daemon, can wait until it shows it.

pub mod callbacks;
mod caller;
pub mod catalog;
pub mod clusters;
mod error;
mod gauges;
pub mod idempotency;
pub mod keys;
pub mod network;
pub mod operations;
pub mod policy;
mod positions;
pub mod taskservs;
pub mod tokens;
pub mod users;
pub mod vms;

use std::sync::Arc;

pub use caller::{Caller, ClientAddr, Principal};
pub use error::{command_not_stored, unreachable, vm_command_failed, Error};
pub use idempotency::{Idempotent, Kept, Outcome};

/// What the use cases work with: the stores, the bus, the catalog's definitions and the
/// platform's rules. Cheap to clone.
#[derive(Clone)]
pub struct App {
    pub pool: store::PgPool,
    pub bus: bus::Bus,
    pub registry: Arc<registry::Registry>,
    pub credentials: Arc<registry::Credentials>,
    /// The cancel cool-off a force-cancel waits for.
    pub job_limits: domain::provisioning::JobLimits,
    /// Checks the tokens of the callback URLs VMs are given.
    pub callbacks: Arc<domain::callbacks::CallbackSigner>,
    /// Networks with fewer prefix bits than this are refused in `allow_ssh_from`.
    pub widest_prefix: u8,
    /// The Cedar policies in force: who may request what, and each user's limits.
    pub policies: Arc<policy::Policies>,
    /// The taskservs' definitions, loaded and checked at start.
    pub taskservs: Arc<::taskservs::Catalog>,
    /// The cluster templates, loaded and checked (against the taskservs) at start.
    pub clusters: Arc<::clusters::ClusterCatalog>,
}
