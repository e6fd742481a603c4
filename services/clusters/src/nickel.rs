//! Evaluating a template file with the contract applied, as Nickel's own CLI would
//! (`nickel export --apply-contract`), and reading the result as JSON: the taskservs
//! crate's loader, with this crate's contract (each catalog ships its own).

use std::path::Path;

/// The contract, shipped inside the crate so that a deployment's templates cannot loosen it.
pub const CONTRACT: &str = include_str!("contract.ncl");

/// Evaluates `path` (a cluster template) with [`CONTRACT`] applied and exports it as JSON.
/// The error is Nickel's diagnostic, without colours, naming the file and line.
pub fn export_json(path: &Path) -> Result<String, String> {
    taskservs::export_with_contract(
        path,
        CONTRACT,
        "contract.ncl (the cluster template contract)",
    )
}
