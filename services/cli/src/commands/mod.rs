//! One function per command; each prints its result and returns what went wrong.

mod catalog;
mod login;
mod logs;
mod vm;

use clap::CommandFactory;

use crate::args::{Cli, Command, ProvidersCommand, TaskservCommand, TemplatesCommand, VmCommand};
use crate::client::Api;
use crate::config;
use crate::error::CliError;

/// Runs the command `cli` names.
pub async fn run(cli: Cli) -> Result<(), CliError> {
    match &cli.command {
        Command::Completions { shell } => {
            let mut command = Cli::command();
            clap_complete::generate(*shell, &mut command, "provisioning", &mut std::io::stdout());
            return Ok(());
        }
        Command::Man => {
            return clap_mangen::Man::new(Cli::command())
                .render(&mut std::io::stdout())
                .map_err(|e| CliError::Local(format!("cannot write the man page: {e}")));
        }
        Command::Login(args) => return login::login(&cli, args).await,
        Command::Logout => return login::logout(&cli),
        _ => {}
    }
    let api = connect(&cli)?;
    let format = cli.output;
    match cli.command {
        Command::Me => catalog::me(&api, format).await,
        Command::Providers(ProvidersCommand::List) => catalog::providers(&api, format).await,
        Command::Templates(TemplatesCommand::List { provider }) => {
            catalog::templates(&api, format, provider.as_deref()).await
        }
        Command::Taskserv(TaskservCommand::List) => catalog::taskservs(&api, format).await,
        Command::Vm(VmCommand::Create(args)) => vm::create(&api, format, args).await,
        Command::Vm(VmCommand::List(args)) => vm::list(&api, format, args).await,
        Command::Vm(VmCommand::Show { vm }) => vm::show(&api, format, &vm).await,
        Command::Vm(VmCommand::Destroy { vm, wait }) => vm::destroy(&api, format, &vm, wait).await,
        Command::Vm(VmCommand::Logs { vm, follow }) => logs::logs(&api, format, &vm, follow).await,
        Command::Login(_) | Command::Logout | Command::Completions { .. } | Command::Man => {
            unreachable!("handled above")
        }
    }
}

/// The API of the platform and token `cli` and the profile give.
fn connect(cli: &Cli) -> Result<Api, CliError> {
    // Scripts with PROVISIONING_TOKEN need no config directory.
    let credentials = match config::credentials_path() {
        Ok(path) => config::load(&path)?,
        Err(_) => config::Credentials::default(),
    };
    let token = cli.token.as_deref().filter(|t| !t.is_empty());
    let url = cli.url.as_deref().filter(|u| !u.is_empty());
    let target = config::resolve(url, token, &cli.profile, &credentials)?;
    Api::new(&target.url, target.token, cli.verbose)
}
