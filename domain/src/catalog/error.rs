use crate::provisioning::{ProviderId, TemplateId, ValueError};

/// Why a catalog command was refused. Each variant is a client mistake.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CatalogError {
    #[error("no provider {:?}", .0.as_str())]
    UnknownProvider(ProviderId),
    #[error("no template {:?} of provider {:?}", .1.as_str(), .0.as_str())]
    UnknownTemplate(ProviderId, TemplateId),
    #[error("a provider {:?} exists already", .0.as_str())]
    DuplicateProvider(ProviderId),
    #[error("provider {:?} has a template {:?} already", .0.as_str(), .1.as_str())]
    DuplicateTemplate(ProviderId, TemplateId),
    /// A field of the command is invalid; names the field.
    #[error(transparent)]
    Invalid(#[from] ValueError),
}
