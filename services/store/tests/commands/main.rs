//! The store's command path against a real Postgres (`DATABASE_URL`, or the local default):
//! each test gets a fresh, migrated database.

mod db;
mod snapshot_properties;
mod snapshots;
