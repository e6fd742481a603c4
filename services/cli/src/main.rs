use std::process::ExitCode;

use clap::Parser;
use provisioning::args::Cli;

fn main() -> ExitCode {
    // Usage mistakes exit 2 here, with clap's message.
    let cli = Cli::parse();
    let verbose = cli.verbose;
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: cannot start: {e}");
            return ExitCode::from(1);
        }
    };
    match runtime.block_on(provisioning::run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            if !matches!(error, provisioning::error::CliError::Interrupted) {
                eprintln!("{}", error.line(verbose));
            }
            error.exit()
        }
    }
}
