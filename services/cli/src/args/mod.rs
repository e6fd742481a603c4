//! The command line, declared once: parsing, `--help`, the shell completions, the man page
//! and the check of docs/cli.md all come from these definitions.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

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
    /// Sign in: keep a personal API token for the profile, checked against the platform.
    Login(LoginArgs),
    /// Forget the profile's credentials.
    Logout,
    /// Who you are: role, groups, limits and usage.
    Me,
    /// Virtual machines.
    #[command(subcommand)]
    Vm(VmCommand),
    /// The providers.
    #[command(subcommand)]
    Providers(ProvidersCommand),
    /// The providers' templates.
    #[command(subcommand)]
    Templates(TemplatesCommand),
    /// The taskservs' catalog: services a VM can install as it boots.
    #[command(subcommand)]
    Taskserv(TaskservCommand),
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
    /// Read a personal API token from standard input.
    #[arg(long = "token")]
    pub with_token: bool,
}

#[derive(Debug, Subcommand)]
pub enum VmCommand {
    /// Request a VM.
    Create(CreateArgs),
    /// Your VMs, newest first (destroyed ones with --all).
    List(ListArgs),
    /// One VM, by id or name.
    Show {
        /// The VM's id or name.
        vm: String,
    },
    /// Destroy a VM.
    Destroy {
        /// The VM's id or name.
        vm: String,
        /// Follow the VM until it is destroyed; exit 3 if the destroy fails.
        #[arg(long)]
        wait: bool,
    },
    /// Terraform's output of the VM's jobs.
    Logs {
        /// The VM's id or name.
        vm: String,
        /// Follow the running job's output live until it ends.
        #[arg(short, long)]
        follow: bool,
    },
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("ssh").required(true).args(["key", "ssh_key"])))]
pub struct CreateArgs {
    /// A provider id (`provisioning providers list`).
    #[arg(long)]
    pub provider: String,
    /// A template id of the provider (`provisioning templates list`).
    #[arg(long)]
    pub template: String,
    /// The VM's name: 1 to 63 characters of A-Z a-z 0-9 . _ -
    #[arg(long)]
    pub name: String,
    /// The id of a registered SSH key.
    #[arg(long)]
    pub key: Option<String>,
    /// An OpenSSH public key file, e.g. ~/.ssh/id_ed25519.pub.
    #[arg(long, value_name = "FILE")]
    pub ssh_key: Option<PathBuf>,
    /// Networks allowed to reach the VM over SSH (IPv4 CIDR, or `me` for your address).
    #[arg(long = "allow", value_name = "CIDR|me", default_value = "me")]
    pub allow: Vec<String>,
    /// How long the VM may live, 1 to 168 hours.
    #[arg(long, default_value_t = 8)]
    pub hours: u16,
    /// A taskserv to install as the VM boots, with params: NAME[:k=v,...]
    #[arg(long = "taskserv", value_name = "NAME[:k=v,...]")]
    pub taskservs: Vec<String>,
    /// Follow the VM until it is provisioned; exit 3 if the create fails.
    #[arg(long)]
    pub wait: bool,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// Only VMs with this status (repeat for several).
    #[arg(long)]
    pub status: Vec<String>,
    /// Only VMs of this provider.
    #[arg(long)]
    pub provider: Option<String>,
    /// Destroyed and archived VMs too.
    #[arg(long)]
    pub all: bool,
}

#[derive(Debug, Subcommand)]
pub enum ProvidersCommand {
    /// The providers and whether they can be used.
    List,
}

#[derive(Debug, Subcommand)]
pub enum TemplatesCommand {
    /// The templates of one provider, or of every available one.
    List {
        #[arg(long)]
        provider: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum TaskservCommand {
    /// The taskservs and their params.
    List,
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
        let doc = include_str!("../../../docs/cli.md");
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
