//! Cluster templates: several VMs made as one (a k3s cluster, an etcd quorum, a primary
//! and its replica).
//!
//! The templates live in `hcl/clusters/`: `registry.toml` lists the deployment's templates
//! and each is a Nickel file, `<name>.ncl`, checked at load by the contract in
//! `contract.ncl` (a mistake is Nickel's message with the file and line) and then across
//! its fields: roles named in `order`, gates and references exist, each role is in one
//! stage, a gate's taskserv is one of its role's, count ranges hold their default, a param
//! refers only to a role made in an earlier stage and to an output one of that role's
//! taskservs declares, and every taskserv is in the taskserv catalog, takes the params
//! given and conflicts with none beside it.
//!
//! This crate is pure: it loads and checks ([`ClusterCatalog::load`]) and resolves a
//! request's counts ([`ClusterTemplate::resolve_counts`]). References such as
//! `{{ roles.server[0].outputs.server_url }}` stay as written; the coordinator that makes
//! the nodes renders them. `docs/clusters.md` tells the same for people writing templates.

mod catalog;
mod checks;
mod nickel;
mod references;
mod template;

pub use catalog::{ClusterCatalog, LoadError};
pub use references::{references_in, Reference};
pub use template::{ClusterTemplate, Count, Gate, Nodes, OnFailure, Role, TaskservUse};
