//! Evaluating a definition file with the contract applied, as Nickel's own CLI would
//! (`nickel export --apply-contract`), and reading the result as JSON.

use std::path::Path;

use nickel_lang_core::error::report::report_as_str;
use nickel_lang_core::eval::cache::CacheImpl;
use nickel_lang_core::program::{Program, ProgramBuilder};
use nickel_lang_core::serialize::{self, ExportFormat};

/// The contract, shipped inside the crate so that a catalog cannot loosen it.
pub const CONTRACT: &str = include_str!("contract.ncl");

/// Evaluates `path` (a `taskserv.ncl`) with [`CONTRACT`] applied and exports it as JSON.
/// The error is Nickel's diagnostic, without colours, naming the file and line.
pub fn export_json(path: &Path) -> Result<String, String> {
    export_with_contract(path, CONTRACT, "contract.ncl (the taskserv contract)")
}

/// Evaluates `path` with `contract` (Nickel source, named `contract_name` in diagnostics)
/// applied and exports it as JSON; for every catalog of Nickel files (the cluster
/// templates too), each with its own contract.
pub fn export_with_contract(
    path: &Path,
    contract: &str,
    contract_name: &str,
) -> Result<String, String> {
    let source = wrapper(path, contract);
    let mut program: Program<CacheImpl> = ProgramBuilder::new()
        .add_source_string(source, contract_name)
        .build()
        .map_err(|e| e.to_string())?;
    let value = match program.eval_full_for_export() {
        Ok(value) => value,
        Err(error) => return Err(report(&program, error)),
    };
    if let Err(error) = serialize::validate(ExportFormat::Json, &value) {
        let error =
            nickel_lang_core::error::Error::export_error(program.pos_table().clone(), error);
        return Err(report(&program, error));
    }
    serialize::to_string(ExportFormat::Json, &value).map_err(|error| {
        let error =
            nickel_lang_core::error::Error::export_error(program.pos_table().clone(), error);
        report(&program, error)
    })
}

/// `(import "<path>") | (<contract>)`: the definition is its own file, so Nickel's blame
/// points into it, at the field that breaks the contract; the contract starts on the first
/// line, so the lines Nickel names in it are those of `contract.ncl`.
fn wrapper(path: &Path, contract: &str) -> String {
    let quoted: String = path
        .display()
        .to_string()
        .chars()
        .flat_map(|c| match c {
            '"' | '\\' | '%' => vec!['\\', c],
            c => vec![c],
        })
        .collect();
    format!("(import \"{quoted}\") | ({contract}\n)")
}

fn report(program: &Program<CacheImpl>, error: nickel_lang_core::error::Error) -> String {
    let mut files = program.files();
    report_as_str(&mut files, error, colorchoice::ColorChoice::Never)
}
