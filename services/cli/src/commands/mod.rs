//! One function per command; each prints its result and returns what went wrong.

mod account;
mod admin;
mod catalog;
mod catalog_admin;
mod cluster;
mod cluster_wait;
mod jobs;
mod login;
mod logs;
mod taskserv;
mod vm;
mod vm_ops;

use clap::CommandFactory;

use crate::args::{
    AdminCommand, AuditCommand, Cli, ClusterCommand, Command, JobCommand, KeysCommand,
    PoliciesCommand, ProvidersCommand, TaskservCommand, TemplatesCommand, TokensCommand,
    UsersCommand, VmCommand,
};
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
    let api = connect(&cli).await?;
    let format = cli.output;
    match cli.command {
        Command::Me => catalog::me(&api, format).await,
        Command::Providers(ProvidersCommand::List) => catalog::providers(&api, format).await,
        Command::Templates(TemplatesCommand::List { provider }) => {
            catalog::templates(&api, format, provider.as_deref()).await
        }
        Command::Taskserv(TaskservCommand::List) => catalog::taskservs(&api, format).await,
        Command::Taskserv(TaskservCommand::Create {
            taskservs,
            vm,
            wait,
        }) => taskserv::create(&api, format, &taskservs, &vm, wait).await,
        Command::Vm(VmCommand::Create(args)) => vm::create(&api, format, args).await,
        Command::Vm(VmCommand::List(args)) => vm::list(&api, format, args).await,
        Command::Vm(VmCommand::Show { vm }) => vm::show(&api, format, &vm).await,
        Command::Vm(VmCommand::Destroy { vm, wait }) => vm::destroy(&api, format, &vm, wait).await,
        Command::Vm(VmCommand::Logs { vm, follow }) => logs::logs(&api, format, &vm, follow).await,
        Command::Vm(VmCommand::Extend { vm, hours }) => {
            vm_ops::extend(&api, format, &vm, hours).await
        }
        Command::Vm(VmCommand::Refresh { vm }) => vm_ops::refresh(&api, format, &vm).await,
        Command::Vm(VmCommand::Retry { vm, wait }) => vm_ops::retry(&api, format, &vm, wait).await,
        Command::Vm(VmCommand::Archive { vm }) => vm_ops::archive(&api, format, &vm).await,
        Command::Vm(VmCommand::Ssh(args)) => vm_ops::ssh(&api, args).await,
        Command::Vm(VmCommand::History { vm, at }) => {
            vm_ops::history(&api, format, &vm, at.as_deref()).await
        }
        Command::Cluster(command) => run_cluster(&api, format, command).await,
        Command::Job(JobCommand::List { vm }) => jobs::list(&api, format, &vm).await,
        Command::Job(JobCommand::Show { vm, job }) => jobs::show(&api, format, &vm, job).await,
        Command::Job(JobCommand::Cancel { vm, job }) => {
            jobs::cancel(&api, format, &vm, job, "cancel").await
        }
        Command::Job(JobCommand::ForceCancel { vm, job }) => {
            jobs::cancel(&api, format, &vm, job, "force-cancel").await
        }
        Command::Providers(ProvidersCommand::Validate { provider }) => {
            catalog::validate(&api, format, provider.as_deref()).await
        }
        Command::Keys(KeysCommand::List) => account::keys(&api, format).await,
        Command::Keys(KeysCommand::Add { name, file }) => {
            account::add_key(&api, format, &name, &file).await
        }
        Command::Keys(KeysCommand::Generate { name, out }) => {
            account::generate_key(&api, format, &name, &out).await
        }
        Command::Keys(KeysCommand::Remove { key }) => account::remove_key(&api, format, &key).await,
        Command::Tokens(TokensCommand::List) => account::tokens(&api, format).await,
        Command::Tokens(TokensCommand::Create { name, expires }) => {
            account::create_token(&api, format, &name, expires.as_deref()).await
        }
        Command::Tokens(TokensCommand::Revoke { token }) => {
            account::revoke_token(&api, format, &token).await
        }
        Command::Admin(AdminCommand::Audit(args)) => match &args.command {
            Some(AuditCommand::Export { filters }) => admin::export(&api, filters).await,
            None => admin::audit(&api, format, args).await,
        },
        Command::Admin(AdminCommand::Users(UsersCommand::List)) => admin::users(&api, format).await,
        Command::Admin(AdminCommand::Users(UsersCommand::SetRole { user, role })) => {
            admin::change_user(&api, format, &user, admin::role(&role)).await
        }
        Command::Admin(AdminCommand::Users(UsersCommand::Disable { user })) => {
            admin::change_user(&api, format, &user, admin::status("disabled")).await
        }
        Command::Admin(AdminCommand::Users(UsersCommand::Enable { user })) => {
            admin::change_user(&api, format, &user, admin::status("active")).await
        }
        Command::Admin(AdminCommand::Policies(PoliciesCommand::Reload)) => {
            admin::reload_policies(&api, format).await
        }
        Command::Admin(AdminCommand::Catalog(command)) => {
            catalog_admin::catalog(&api, format, &command).await
        }
        Command::Login(_) | Command::Logout | Command::Completions { .. } | Command::Man => {
            unreachable!("handled above")
        }
    }
}

async fn run_cluster(
    api: &Api,
    format: crate::args::Format,
    command: ClusterCommand,
) -> Result<(), CliError> {
    match command {
        ClusterCommand::Templates => cluster::templates(api, format).await,
        ClusterCommand::Create(args) => cluster::create(api, format, args).await,
        ClusterCommand::List { all, everyone } => cluster::list(api, format, all, everyone).await,
        ClusterCommand::Show { cluster } => cluster::show(api, format, &cluster).await,
        ClusterCommand::Scale {
            cluster,
            role,
            count,
            wait,
        } => cluster::scale(api, format, &cluster, &role, count, wait).await,
        ClusterCommand::Destroy { cluster, wait } => {
            cluster::destroy(api, format, &cluster, wait).await
        }
        ClusterCommand::Events { cluster, follow } => {
            cluster_wait::events(api, format, &cluster, follow).await
        }
    }
}

/// The API of the platform and token `cli` and the profile give; the profile's access
/// token refreshed first when it ended.
async fn connect(cli: &Cli) -> Result<Api, CliError> {
    let token = cli.token.as_deref().filter(|t| !t.is_empty());
    let url = cli.url.as_deref().filter(|u| !u.is_empty());
    // Scripts with PROVISIONING_TOKEN need no config directory.
    let path = config::credentials_path().ok();
    let mut credentials = match &path {
        Some(path) => config::load(path)?,
        None => config::Credentials::default(),
    };
    if token.is_none() && login::refresh_if_due(&mut credentials, &cli.profile, cli.verbose).await?
    {
        if let Some(path) = &path {
            config::save(path, &credentials)?;
        }
    }
    let target = config::resolve(url, token, &cli.profile, &credentials)?;
    Api::new(&target.url, target.token, cli.verbose)
}
