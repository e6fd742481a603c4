//! What the platform offers (`providers`, `templates`, `taskserv`) and what a user keeps
//! there (`keys`, `tokens`).

use std::path::PathBuf;

use clap::Subcommand;

#[derive(Debug, Subcommand)]
pub enum ProvidersCommand {
    /// The providers and whether they can be used.
    List,
    /// Check that providers can take requests: enabled, credentials present, templates
    /// offered; exit 1 if one cannot.
    Validate {
        /// Only this provider.
        provider: Option<String>,
    },
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
    /// Install taskservs on a running VM: an install job runs each over SSH, its
    /// requirements first.
    Create {
        /// A taskserv, with its params as `NAME[:k=v,...]` (e.g. `grafana:port=3001`);
        /// several may be given.
        #[arg(required = true, value_name = "NAME[:k=v,...]")]
        taskservs: Vec<String>,
        /// The VM, by name or id (`--infra`, as the seed names it, works too).
        #[arg(long, visible_alias = "infra", value_name = "VM")]
        vm: String,
        /// Follow the install job until it ends; exit 3 if a taskserv failed.
        #[arg(long)]
        wait: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// Your registered keys.
    List,
    /// Register a public key from a file.
    Add {
        /// A name for the key.
        name: String,
        /// An OpenSSH public key file, e.g. ~/.ssh/id_ed25519.pub.
        #[arg(value_name = "FILE")]
        file: PathBuf,
    },
    /// Make an ed25519 key pair on the platform, register its public key and write the
    /// private key to a new file (readable by you only).
    Generate {
        /// A name for the key.
        name: String,
        /// Where to write the private key (a new file).
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
    },
    /// Remove a registered key (VMs created with it keep it).
    Remove {
        /// The key's id or name.
        key: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum TokensCommand {
    /// Your tokens (not revoked).
    List,
    /// Make a personal API token; its secret is printed this once.
    Create {
        /// A name for the token.
        name: String,
        /// When it stops working (RFC 3339); never, if left out.
        #[arg(long, value_name = "TIME")]
        expires: Option<String>,
    },
    /// Revoke one of your tokens.
    Revoke {
        /// The token's id or name.
        token: String,
    },
}
