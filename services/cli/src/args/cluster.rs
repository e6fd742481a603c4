//! `cluster`: several VMs made as one from a cluster template (docs/clusters.md).

use std::path::PathBuf;

use clap::{Args, Subcommand};

#[derive(Debug, Subcommand)]
pub enum ClusterCommand {
    /// The cluster templates: name, description, roles with their node counts.
    Templates,
    /// Request a cluster of a template.
    Create(ClusterCreateArgs),
    /// Your clusters, newest first (destroyed ones with --all).
    List {
        /// Destroyed clusters too.
        #[arg(long)]
        all: bool,
        /// Every user's clusters, not only yours (admins).
        #[arg(long)]
        everyone: bool,
    },
    /// One cluster: status, roles, nodes with their VMs' status and address, gates, outputs.
    Show {
        /// The cluster's id or name.
        cluster: String,
    },
    /// Give a role of a ready cluster a new node count within its range.
    Scale {
        /// The cluster's id or name.
        cluster: String,
        /// The role, e.g. `agent`.
        role: String,
        /// Its new node count.
        count: u32,
        /// Follow the cluster until the scale completes (its added nodes passed their
        /// role's gates, or its dropped nodes are destroyed); exit 3 if it fails.
        #[arg(long)]
        wait: bool,
    },
    /// Destroy every node of a cluster.
    Destroy {
        /// The cluster's id or name.
        cluster: String,
        /// Follow the cluster until it is destroyed.
        #[arg(long)]
        wait: bool,
    },
    /// The cluster's events (NodeRequested, GatePassed, ClusterReady, ...).
    Events {
        /// The cluster's id or name.
        cluster: String,
        /// Keep printing events as they come (Ctrl-C stops).
        #[arg(short, long)]
        follow: bool,
    },
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("ssh").required(true).args(["key", "ssh_key"])))]
pub struct ClusterCreateArgs {
    /// A cluster template (`provisioning cluster templates`); the seed's names
    /// `kubernetes-single` and `kubernetes-ha` stand for `k3s-single` and `k3s-ha`.
    pub template: String,
    /// The cluster's name: node `i` of role `r` is the VM `<name>-<r>-<i>`.
    #[arg(long)]
    pub name: String,
    /// The provider every node is made on.
    #[arg(long)]
    pub provider: String,
    /// A role's node count, within its range: ROLE=N (repeat for several roles).
    #[arg(long = "count", value_name = "ROLE=N")]
    pub counts: Vec<String>,
    /// A role's provider template, among the role's: ROLE=TEMPLATE.
    #[arg(long = "template", value_name = "ROLE=TEMPLATE")]
    pub templates: Vec<String>,
    /// The id of a registered SSH key, for every node.
    #[arg(long)]
    pub key: Option<String>,
    /// An OpenSSH public key file for every node, e.g. ~/.ssh/id_ed25519.pub.
    #[arg(long, value_name = "FILE")]
    pub ssh_key: Option<PathBuf>,
    /// Networks allowed to reach the nodes over SSH (IPv4 CIDR, or `me` for your address).
    #[arg(long = "allow", value_name = "CIDR|me", default_value = "me")]
    pub allow: Vec<String>,
    /// How long the nodes may live, 1 to 168 hours.
    #[arg(long, default_value_t = 8)]
    pub hours: u16,
    /// Follow the cluster's events until it is ready; exit 3 if it fails.
    #[arg(long)]
    pub wait: bool,
}
