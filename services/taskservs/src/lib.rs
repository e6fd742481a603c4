//! Taskservs: services installed on a VM after it boots (docker, k3s, postgresql, ...).
//!
//! The catalog lives in `hcl/taskservs/`: `registry.toml` lists the deployment's
//! taskservs, and each has a folder with `taskserv.ncl` (its definition, checked at load by
//! the Nickel contract in `contract.ncl`), `install.sh.j2` and `health.sh.j2` (Jinja2
//! templates of bash scripts). This crate is pure: it loads and checks the catalog
//! ([`Catalog::load`]), resolves a request into an ordered plan ([`Catalog::resolve`]),
//! renders each step's scripts ([`Catalog::render`]) and writes the driver that runs them
//! ([`driver`]). `docs/taskservs.md` tells the same for people writing taskservs.
//!
//! # Runtime convention for scripts
//!
//! - Scripts run as root, with bash, on the VM, from `/var/lib/provisioning/taskservs/<name>/`.
//! - An install script writes its outputs as `key=value` lines to the file named by
//!   `$TASKSERV_OUTPUTS` (`/var/lib/provisioning/taskservs/<name>/outputs`, emptied before
//!   each run). A dependant reads a dependency's outputs on the VM at
//!   `/var/lib/provisioning/taskservs/<dep>/outputs`: at create time the template's `deps`
//!   are empty, since the dependency is installed on the same boot. Outputs are reported
//!   to the platform: never a secret itself, only where the secret is kept.
//! - The health script exits 0 when healthy. It is one check: `run.sh` runs it again every
//!   2 s until it passes or the definition's `health.timeout_secs` has passed.
//! - Scripts are idempotent: a second run changes nothing (check before installing,
//!   `apt-get install -y`, never regenerate a secret that exists) and `shellcheck`-clean.

mod catalog;
mod checks;
mod definition;
mod driver;
mod nickel;
mod render;
mod resolve;
mod target;

pub use catalog::{Catalog, LoadError};
pub use definition::{
    Definition, Dependency, DependencyKind, Health, ParamSpec, ParamType, Resources,
};
pub use driver::{driver, ScriptFile, StepCallbacks, BASE_DIR};
pub use nickel::export_with_contract;
pub use render::{RenderError, Rendered, VmFacts};
pub use resolve::Refusal;
pub use target::{os_family, Target};

#[cfg(test)]
mod tests;
