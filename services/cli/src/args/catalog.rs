//! `admin catalog providers|templates`: offering an entry or not, adding one, changing its
//! fields and putting the entries in order, as the admin API takes them.

use clap::{Args, Subcommand};

#[derive(Debug, Subcommand)]
pub enum ProvidersEdit {
    /// Offer it.
    Enable(ProviderArg),
    /// Stop offering it (its VMs stay).
    Disable(ProviderArg),
    /// Add a provider (its Terraform folder and credentials are configured separately).
    Create(ProviderCreate),
    /// Change a provider's name or place in the order.
    Update(ProviderUpdate),
    /// Put the providers in a new order: every provider's id, each once, first first.
    Reorder {
        /// The ids in their new order.
        #[arg(required = true)]
        ids: Vec<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum TemplatesEdit {
    /// Offer it.
    Enable(TemplateArg),
    /// Stop offering it.
    Disable(TemplateArg),
    /// Add a template to a provider.
    Create(TemplateCreate),
    /// Change a template's fields; those not given stay as they are.
    Update(TemplateUpdate),
    /// Put a provider's templates in a new order: every id of its templates, each once,
    /// first first.
    Reorder {
        /// The provider's id.
        provider: String,
        /// The template ids in their new order.
        #[arg(required = true)]
        ids: Vec<String>,
    },
}

#[derive(Debug, Args)]
pub struct ProviderArg {
    /// The provider's id.
    pub provider: String,
}

#[derive(Debug, Args)]
pub struct TemplateArg {
    /// The provider's id.
    pub provider: String,
    /// The template's id.
    pub template: String,
}

#[derive(Debug, Args)]
pub struct ProviderCreate {
    /// The new provider's id: 1 to 64 characters of `[a-z0-9._-]`.
    pub provider: String,
    /// The name users read, e.g. `NREC UiO`.
    #[arg(long)]
    pub name: String,
    /// Add it without offering it yet.
    #[arg(long)]
    pub disabled: bool,
    /// Its place in the order (default: after the last provider).
    #[arg(long)]
    pub sort_order: Option<i32>,
}

#[derive(Debug, Args)]
pub struct ProviderUpdate {
    /// The provider's id.
    pub provider: String,
    /// A new name.
    #[arg(long)]
    pub name: Option<String>,
    /// A new place in the order.
    #[arg(long)]
    pub sort_order: Option<i32>,
}

#[derive(Debug, Args)]
pub struct TemplateCreate {
    /// The provider's id.
    pub provider: String,
    /// The new template's id: 1 to 64 characters of `[a-z0-9._-]`, unique within the
    /// provider.
    pub template: String,
    /// The name users read.
    #[arg(long)]
    pub name: String,
    /// What it is for (default empty).
    #[arg(long)]
    pub description: Option<String>,
    /// The provider's flavor (size) name.
    #[arg(long)]
    pub flavor_name: String,
    /// The provider's image name.
    #[arg(long)]
    pub image_name: String,
    /// The user to sign in as (default `ubuntu`).
    #[arg(long)]
    pub username: Option<String>,
    /// Virtual CPUs.
    #[arg(long, value_parser = clap::value_parser!(i32).range(1..))]
    pub cpu: i32,
    /// Memory, in GB.
    #[arg(long, value_parser = clap::value_parser!(i32).range(1..))]
    pub ram_gb: i32,
    /// Disk, in GB.
    #[arg(long, value_parser = clap::value_parser!(i32).range(1..))]
    pub storage_gb: i32,
    /// Its GPU, if any.
    #[arg(long)]
    pub gpu: Option<String>,
    /// A tag (a lowercase word); repeat for several.
    #[arg(long = "tag", value_name = "TAG")]
    pub tags: Vec<String>,
    /// Add it without offering it yet.
    #[arg(long)]
    pub disabled: bool,
    /// Its place among the provider's templates (default: after the last).
    #[arg(long)]
    pub sort_order: Option<i32>,
}

#[derive(Debug, Args)]
pub struct TemplateUpdate {
    /// The provider's id.
    pub provider: String,
    /// The template's id.
    pub template: String,
    /// A new name.
    #[arg(long)]
    pub name: Option<String>,
    /// A new description.
    #[arg(long)]
    pub description: Option<String>,
    /// A new flavor name.
    #[arg(long)]
    pub flavor_name: Option<String>,
    /// A new image name.
    #[arg(long)]
    pub image_name: Option<String>,
    /// A new user to sign in as.
    #[arg(long)]
    pub username: Option<String>,
    /// Virtual CPUs.
    #[arg(long, value_parser = clap::value_parser!(i32).range(1..))]
    pub cpu: Option<i32>,
    /// Memory, in GB.
    #[arg(long, value_parser = clap::value_parser!(i32).range(1..))]
    pub ram_gb: Option<i32>,
    /// Disk, in GB.
    #[arg(long, value_parser = clap::value_parser!(i32).range(1..))]
    pub storage_gb: Option<i32>,
    /// A new GPU.
    #[arg(long, conflicts_with = "no_gpu")]
    pub gpu: Option<String>,
    /// Remove its GPU.
    #[arg(long)]
    pub no_gpu: bool,
    /// Its tags, replacing the ones it has; repeat for several.
    #[arg(long = "tag", value_name = "TAG")]
    pub tags: Vec<String>,
    /// A new place among the provider's templates.
    #[arg(long)]
    pub sort_order: Option<i32>,
}
