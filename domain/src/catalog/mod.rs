//! One `Catalog` aggregate (id [`CATALOG_ID`]) holds every provider and template, so admin
//! changes to the catalog are serialized and each one is an event in one audit history.
//!
//! The `providers` and `templates` tables are its projection, but migrations seed rows into
//! them that no event describes. So the aggregate's services are the tables' current rows
//! (a [`Seed`], read by the store before each command): a command is decided on the
//! catalog plus the seed rows it does not know yet, and if it records anything, a
//! `SeedImported` event with those rows is written first, in the same commit. The first
//! admin change thus imports the whole migration seed, later ones import nothing (or only
//! what a newer migration added), and a refused or no-op command writes nothing. Rows that
//! events created are never "unknown": the aggregate is ahead of its projection, never
//! behind. Projecting `SeedImported` upserts the values the rows held, so replaying every
//! event onto the tables as they are (a rebuild) gives the same rows.

mod aggregate;
mod commands;
mod error;
mod events;
mod rules;

pub use aggregate::{Catalog, Seed, CATALOG_ID};
pub use commands::CatalogCommand;
pub use error::CatalogError;
pub use events::{present, CatalogEvent, ProviderSpec, TemplateChanges, TemplateSpec};
pub use rules::{MAX_ORDER, MAX_TAGS};
