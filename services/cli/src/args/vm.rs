//! `vm` and `job`: a VM's life and its jobs.

use std::path::PathBuf;

use clap::{Args, Subcommand};

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
    /// Give the VM more time before it expires.
    Extend {
        /// The VM's id or name.
        vm: String,
        /// Hours added to its expiry (counted from now if it is past).
        #[arg(long)]
        hours: u16,
    },
    /// Read what the cloud has of the VM (Terraform's refresh-only plan), as a job.
    Refresh {
        /// The VM's id or name.
        vm: String,
    },
    /// Run the VM's failed (or cancelled) create or destroy again.
    Retry {
        /// The VM's id or name.
        vm: String,
        /// Follow the job until it ends; exit 3 if it fails.
        #[arg(long)]
        wait: bool,
    },
    /// Archive a destroyed VM: `vm list --all` still shows it.
    Archive {
        /// The VM's id (a destroyed VM has no name that counts).
        vm: String,
    },
    /// Open an SSH session on the VM (runs `ssh` with its address and login user).
    Ssh(SshArgs),
    /// The VM's history: every event but Terraform's lines; with --at, the VM as it was then.
    History {
        /// The VM's id or name.
        vm: String,
        /// A time (RFC 3339) or an event position: show the VM as it was then.
        #[arg(long, value_name = "TIME|POSITION")]
        at: Option<String>,
    },
}

#[derive(Debug, Args)]
pub struct SshArgs {
    /// The VM's id or name.
    pub vm: String,
    /// The login user (else the template's, e.g. `ubuntu`).
    #[arg(short = 'l', long)]
    pub user: Option<String>,
    /// The private key file (ssh's -i).
    #[arg(short = 'i', long, value_name = "FILE")]
    pub identity: Option<PathBuf>,
    /// Further arguments for ssh, after `--` (a command to run, say).
    #[arg(last = true)]
    pub ssh_args: Vec<String>,
}

#[derive(Debug, Subcommand)]
pub enum JobCommand {
    /// The VM's jobs, in the order they were asked for.
    List {
        /// The VM's id or name.
        vm: String,
    },
    /// One job of the VM.
    Show {
        /// The VM's id or name.
        vm: String,
        /// The job's number.
        job: u32,
    },
    /// Cancel a job: a queued one at once, a running one stopped by its runner.
    Cancel {
        /// The VM's id or name.
        vm: String,
        /// The job's number.
        job: u32,
    },
    /// End a running job whose cancel did not stop it (its runner is killed).
    ForceCancel {
        /// The VM's id or name.
        vm: String,
        /// The job's number.
        job: u32,
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
