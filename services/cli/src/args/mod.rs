//! The command line, declared once: parsing, `--help`, the shell completions, the man page
//! and the check of docs/cli.md all come from these definitions.

mod account;
mod admin;
mod catalog;
mod cluster;
mod vm;

use clap::{Args, Parser, Subcommand, ValueEnum};

pub use account::{
    KeysCommand, ProvidersCommand, TaskservCommand, TemplatesCommand, TokensCommand,
};
pub use admin::{
    AdminCommand, AuditArgs, AuditCommand, AuditFilters, CatalogCommand, PoliciesCommand, Switch,
    UsersCommand,
};
pub use catalog::{
    ProviderCreate, ProviderUpdate, ProvidersEdit, TemplateCreate, TemplateUpdate, TemplatesEdit,
};
pub use cluster::{ClusterCommand, ClusterCreateArgs};
pub use vm::{CreateArgs, JobCommand, ListArgs, SshArgs, VmCommand};

/// The platform's command line: request, follow and destroy VMs through its REST API.
#[derive(Debug, Parser)]
#[command(name = "provisioning", version, propagate_version = true)]
#[command(
    after_help = "Exit codes: 0 done, 1 the platform refused (or could not be reached), \
2 usage, 3 the job failed (with --wait), 4 not signed in."
)]
pub struct Cli {
    /// The platform's URL, e.g. http://127.0.0.1:8080 (else the profile's).
    #[arg(
        long,
        env = "PROVISIONING_URL",
        global = true,
        help_heading = "Global options"
    )]
    pub url: Option<String>,
    /// A bearer token to use instead of the profile's (given before the subcommand).
    // Not global: `login --token` is a flag of its own. The value never shows in --help.
    #[arg(long, env = "PROVISIONING_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// The credentials' profile.
    #[arg(
        long,
        default_value = "default",
        global = true,
        help_heading = "Global options"
    )]
    pub profile: String,
    /// How results are printed.
    #[arg(short, long, value_enum, default_value_t = Format::Table, global = true, help_heading = "Global options")]
    pub output: Format,
    /// Print each request (method, URL, request id) and the error codes to stderr.
    #[arg(short, long, global = true, help_heading = "Global options")]
    pub verbose: bool,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Table,
    Json,
    Yaml,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Sign in in a browser through the platform's OpenID provider (or with a personal API
    /// token, --token), and keep the credentials for the profile.
    Login(LoginArgs),
    /// Forget the profile's credentials.
    Logout,
    /// Who you are: role, groups, limits and usage.
    Me,
    /// Virtual machines.
    #[command(subcommand)]
    Vm(VmCommand),
    /// Clusters: several VMs made as one from a cluster template.
    #[command(subcommand)]
    Cluster(ClusterCommand),
    /// The jobs of a VM: the creates, destroys, refreshes and installs it asked for.
    #[command(subcommand)]
    Job(JobCommand),
    /// The providers.
    #[command(subcommand)]
    Providers(ProvidersCommand),
    /// The providers' templates.
    #[command(subcommand)]
    Templates(TemplatesCommand),
    /// The taskservs' catalog: services a VM can install as it boots.
    #[command(subcommand)]
    Taskserv(TaskservCommand),
    /// Your SSH public keys, given to the VMs you create.
    #[command(subcommand)]
    Keys(KeysCommand),
    /// Your personal API tokens, for programs.
    #[command(subcommand)]
    Tokens(TokensCommand),
    /// The platform's administration (admins): audit, users, policies.
    #[command(subcommand)]
    Admin(AdminCommand),
    /// Print a shell's completion script.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff).
    Man,
}

#[derive(Debug, Args)]
pub struct LoginArgs {
    /// The platform's URL (else --url, PROVISIONING_URL or the profile's).
    pub url_arg: Option<String>,
    /// Read a personal API token from standard input instead.
    #[arg(long = "token", conflicts_with_all = ["device", "no_browser"])]
    pub with_token: bool,
    /// Sign in with a code typed in at the provider's page, from any device (the OAuth 2.0
    /// device authorization grant).
    #[arg(long)]
    pub device: bool,
    /// Print the sign-in URL instead of opening a browser.
    #[arg(long, conflicts_with = "device")]
    pub no_browser: bool,
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    #[test]
    fn the_definitions_are_consistent() {
        Cli::command().debug_assert();
    }

    /// Every command path, e.g. `vm create`, of the tree clap defines.
    fn paths(command: &clap::Command, prefix: &str, out: &mut Vec<String>) {
        for sub in command.get_subcommands() {
            if sub.get_name() == "help" {
                continue;
            }
            let path = format!("{prefix}{}", sub.get_name()).trim().to_owned();
            out.push(path.clone());
            paths(sub, &format!("{path} "), out);
        }
    }

    #[test]
    fn docs_cli_md_names_every_subcommand_clap_defines() {
        let doc = include_str!("../../../../docs/cli.md");
        let mut all = vec![];
        paths(&Cli::command(), "", &mut all);
        assert!(all.contains(&"vm create".to_owned()));
        let missing: Vec<_> = all
            .iter()
            .filter(|path| !doc.contains(&format!("provisioning {path}")))
            .collect();
        assert!(missing.is_empty(), "docs/cli.md lacks {missing:?}");
    }

    #[test]
    fn login_token_is_a_flag_beside_the_global_token_value() {
        let cli = Cli::try_parse_from(["provisioning", "login", "http://x", "--token"]).unwrap();
        let Command::Login(login) = cli.command else {
            panic!("login")
        };
        assert!(login.with_token);
        assert_eq!(login.url_arg.as_deref(), Some("http://x"));
    }
}
