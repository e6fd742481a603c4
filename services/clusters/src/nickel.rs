//! Evaluating a template file with the contract applied, as Nickel's own CLI would
//! (`nickel export --apply-contract`), and reading the result as JSON. The same steps as the
//! taskservs crate's loader, with this crate's contract: each catalog ships its own.

use std::path::Path;

use nickel_lang_core::error::report::report_as_str;
use nickel_lang_core::eval::cache::CacheImpl;
use nickel_lang_core::program::{Program, ProgramBuilder};
use nickel_lang_core::serialize::{self, ExportFormat};

/// The contract, shipped inside the crate so that a deployment's templates cannot loosen it.
pub const CONTRACT: &str = include_str!("contract.ncl");

/// Evaluates `path` (a cluster template) with [`CONTRACT`] applied and exports it as JSON.
/// The error is Nickel's diagnostic, without colours, naming the file and line.
pub fn export_json(path: &Path) -> Result<String, String> {
    let source = wrapper(path);
    let mut program: Program<CacheImpl> = ProgramBuilder::new()
        .add_source_string(source, "contract.ncl (the cluster template contract)")
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

/// `(import "<path>") | (<contract>)`: the template is its own file, so Nickel's blame
/// points into it, at the field that breaks the contract; the contract starts on the first
/// line, so the lines Nickel names in it are those of `contract.ncl`.
fn wrapper(path: &Path) -> String {
    let quoted: String = path
        .display()
        .to_string()
        .chars()
        .flat_map(|c| match c {
            '"' | '\\' | '%' => vec!['\\', c],
            c => vec![c],
        })
        .collect();
    format!("(import \"{quoted}\") | ({CONTRACT}\n)")
}

fn report(program: &Program<CacheImpl>, error: nickel_lang_core::error::Error) -> String {
    let mut files = program.files();
    report_as_str(&mut files, error, colorchoice::ColorChoice::Never)
}
