//! Postgres, the source of truth: the event store (one command path for every aggregate,
//! with snapshots and a global commit order), the feed that follows it, the read models and
//! the catalog.

pub mod api_tokens;
pub mod as_of;
pub mod audit;
pub mod catalog;
pub mod clusters;
mod command;
mod db;
pub mod dead_letters;
pub mod drift;
mod events;
pub mod feed;
pub mod gauges;
pub mod idempotency;
pub mod lease;
pub mod life;
pub mod liveness;
pub mod naic;
pub mod positions;
pub mod projected;
pub mod runner_keys;
pub mod sessions;
pub mod ssh_keys;
pub mod terraform_state;
mod together;
pub mod upcast;
pub mod users;
pub mod views;
pub mod wake;

pub use command::{
    execute, execute_all, execute_with, load, CommandError, Committed, Metadata, Receipt, Recorded,
    Stored, RETRY_FOR,
};
pub use db::{connect, connect_with, migrate, SessionLimits, StoreError};
pub use domain::Actor;
pub use events::{
    audit_events, last_sequence, last_sequence_of, status_history, vm_events, vm_owner, AuditEvent,
};
pub use together::{execute_together, Batch, Outcome, States};

pub use sqlx::{self, PgPool};
