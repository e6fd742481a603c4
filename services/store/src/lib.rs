//! Postgres, the source of truth: the event store (postgres-es with a global commit order),
//! the feed that follows it, the read models and the catalog.

pub mod catalog;
mod db;
mod events;
pub mod feed;
pub mod lease;
pub mod views;

pub use db::{connect, migrate, StoreError};
pub use events::{
    cqrs, execute, job_waiting, last_sequence, last_sequence_of, vm_events, AuditEvent,
    CommandError, Metadata, ProvisioningCqrs,
};

pub use sqlx::{self, PgPool};
