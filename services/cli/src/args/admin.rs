//! `admin`: the platform's administration, for admins.

use clap::{Args, Subcommand};

use super::catalog::{ProvidersEdit, TemplatesEdit};

// Parsed once per run: the size of a variant does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum AdminCommand {
    /// The audit history: every event of the platform in order (--follow: live).
    Audit(AuditArgs),
    /// The users.
    #[command(subcommand)]
    Users(UsersCommand),
    /// The access policies.
    #[command(subcommand)]
    Policies(PoliciesCommand),
    /// The catalog: providers, templates and taskservs offered, enabled or disabled.
    #[command(subcommand)]
    Catalog(CatalogCommand),
}

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct AuditArgs {
    #[command(flatten)]
    pub filters: AuditFilters,
    /// Keep printing events as they commit (Ctrl-C stops).
    #[arg(short, long)]
    pub follow: bool,
    /// At most this many events (without --follow), from the first after --after.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=10000))]
    pub limit: u32,
    /// Only events after this position (the next page: what the last page says).
    #[arg(long, value_name = "POSITION")]
    pub after: Option<u64>,
    #[command(subcommand)]
    pub command: Option<AuditCommand>,
}

#[derive(Debug, Subcommand)]
pub enum AuditCommand {
    /// Every event the filters select as NDJSON, one JSON object a line (for a file).
    Export {
        #[command(flatten)]
        filters: AuditFilters,
    },
}

/// The audit history's filters, as the API takes them.
#[derive(Debug, Clone, Args)]
pub struct AuditFilters {
    /// Only events caused by this actor (`admin`, `runner`, `expiry`, a user id ...).
    #[arg(long)]
    pub actor: Option<String>,
    /// Only events of this type (`Requested`, `Failed`, ...); repeat for several.
    #[arg(long = "type", value_name = "TYPE")]
    pub types: Vec<String>,
    /// Only the events of this VM (its id).
    #[arg(long)]
    pub vm: Option<String>,
    /// Only the events of VMs on this provider.
    #[arg(long)]
    pub provider: Option<String>,
    /// Only events recorded at or after this time (RFC 3339).
    #[arg(long, value_name = "TIME")]
    pub from: Option<String>,
    /// Only events recorded before this time (RFC 3339).
    #[arg(long, value_name = "TIME")]
    pub to: Option<String>,
    /// Terraform's lines (`LogLine`) too.
    #[arg(long)]
    pub logs: bool,
}

#[derive(Debug, Subcommand)]
pub enum UsersCommand {
    /// Every user, oldest first.
    List,
    /// Change a user's role.
    SetRole {
        /// The user's id or email.
        user: String,
        /// `user`, `admin` or `super_admin` (super admins only).
        role: String,
    },
    /// Disable a user: their tokens and sessions stop working.
    Disable {
        /// The user's id or email.
        user: String,
    },
    /// Enable a disabled user again.
    Enable {
        /// The user's id or email.
        user: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum PoliciesCommand {
    /// Read the policies again (the replica answering; each replica reloads on its own
    /// signal too).
    Reload,
}

#[derive(Debug, Subcommand)]
pub enum CatalogCommand {
    /// Offer a provider or stop offering it (its VMs stay); add, change or reorder them.
    #[command(subcommand)]
    Providers(ProvidersEdit),
    /// Offer a provider's template or stop offering it; add, change or reorder them.
    #[command(subcommand)]
    Templates(TemplatesEdit),
    /// Offer a taskserv on a provider, or stop offering it there.
    #[command(subcommand)]
    Taskserv(Switch<TaskservArg>),
}

/// `enable` or `disable` one entry of the catalog.
#[derive(Debug, Subcommand)]
pub enum Switch<T: Args> {
    /// Offer it.
    Enable(T),
    /// Stop offering it.
    Disable(T),
}

impl<T: Args> Switch<T> {
    /// The entry, and whether it is to be enabled.
    pub fn parts(&self) -> (&T, bool) {
        match self {
            Switch::Enable(entry) => (entry, true),
            Switch::Disable(entry) => (entry, false),
        }
    }
}

#[derive(Debug, Args)]
pub struct TaskservArg {
    /// The provider's id.
    pub provider: String,
    /// The taskserv's name.
    pub name: String,
}
