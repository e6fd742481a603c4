//! What a use case answers when it does not do what was asked. Each face maps these to its
//! own answers (`/api/v1` to a status with `{code, detail}`); the texts are the details a
//! client reads, so they say what to do, and never carry a secret.

use domain::catalog::CatalogError;
use domain::provisioning::{ProvisioningError, VmId};
use store::CommandError;

/// Every refusal and failure of a use case.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A field of the input is wrong; the reason says how.
    #[error("{field}: {reason}")]
    Invalid { field: String, reason: String },
    /// The caller may not do this: `policy` names the Cedar policy that refused it, when
    /// one did (otherwise the rule is the caller's role).
    #[error("{detail}")]
    Forbidden {
        policy: Option<String>,
        detail: String,
    },
    /// What the caller named does not exist, or they may not see it.
    #[error("{0}")]
    NotFound(String),
    /// The request contradicts the state it meets (a VM being destroyed, a duplicate id).
    #[error("{0}")]
    Conflict(String),
    /// Nothing was changed for now (the database cannot be reached, others kept winning
    /// the race, the read models lag); the same request may succeed later.
    #[error("{0}")]
    Unavailable(String),
    /// What the request would make is larger than the platform carries.
    #[error("{0}")]
    TooLarge(String),
    /// A fault of the platform; the cause stays whole for the face's log, the caller sees
    /// only that it failed.
    #[error("internal error")]
    Internal(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl Error {
    /// An internal error from an error (kept with its sources) or a message.
    pub fn internal(cause: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        Error::Internal(cause.into())
    }

    /// A refusal naming no policy (the caller's role decides).
    pub fn forbidden(detail: impl Into<String>) -> Self {
        Error::Forbidden {
            policy: None,
            detail: detail.into(),
        }
    }

    /// A field the caller gave that the use case cannot take, and why.
    pub fn invalid(field: &str, reason: impl Into<String>) -> Self {
        Error::Invalid {
            field: field.into(),
            reason: reason.into(),
        }
    }
}

impl From<store::sqlx::Error> for Error {
    fn from(e: store::sqlx::Error) -> Self {
        if unreachable(&e) {
            tracing::warn!(error = %e, "the database cannot be reached");
            return Error::Unavailable(
                "the database cannot be reached; nothing was changed by this request".into(),
            );
        }
        Error::internal(e)
    }
}

/// Whether a database error says the database cannot be reached now (no connection within
/// the pool's acquire timeout, a connection lost, the server shutting down or full), rather
/// than a fault of the request or the code: the same request may succeed later.
pub fn unreachable(e: &store::sqlx::Error) -> bool {
    use store::sqlx::Error;
    match e {
        Error::PoolTimedOut | Error::PoolClosed | Error::Io(_) | Error::Tls(_) => true,
        Error::WorkerCrashed | Error::Protocol(_) => true,
        // Class 08: connection exception; 57P01-57P03: the server is shutting down or
        // starting; 53300: too many connections.
        Error::Database(db) => db.code().is_some_and(|code| {
            code.starts_with("08") || code.starts_with("57P") || code == "53300"
        }),
        _ => false,
    }
}

/// A store failure outside a command: the database's own errors as usual, the rest internal.
impl From<store::StoreError> for Error {
    fn from(e: store::StoreError) -> Self {
        match e {
            store::StoreError::Database(db) => db.into(),
            e => Error::internal(e),
        }
    }
}

impl From<domain::provisioning::ValueError> for Error {
    fn from(e: domain::provisioning::ValueError) -> Self {
        Error::Invalid {
            field: e.field.to_owned(),
            reason: e.reason,
        }
    }
}

// How a command that did not commit is answered: the one place for both aggregates.
// A refusal is the caller's (not found, conflict or invalid, by the domain error); a
// command that kept losing the race with other writers for the store's whole retry time,
// or a database that cannot be reached, is unavailable (nothing was written); any other
// store failure is internal.

/// A failed command on VM `vm`; refusals name the VM.
pub fn vm_command_failed(vm: VmId, e: CommandError<ProvisioningError>) -> Error {
    match e {
        CommandError::Rejected(ProvisioningError::NotFound) => {
            Error::NotFound(format!("no VM {vm}"))
        }
        CommandError::Rejected(e @ ProvisioningError::NoSuchJob(_)) => {
            Error::NotFound(e.to_string())
        }
        CommandError::Rejected(ProvisioningError::AlreadyRequested) => {
            Error::Conflict(format!("a VM with id {vm} exists already"))
        }
        CommandError::Rejected(ProvisioningError::CallbackRefused(_)) => {
            // Said no more than for a token that never was: nothing to probe.
            Error::NotFound("no such callback".into())
        }
        CommandError::Rejected(ProvisioningError::ExtendPastPolicy { policy, hours }) => {
            let detail = ProvisioningError::ExtendPastPolicy {
                policy: policy.clone(),
                hours,
            }
            .to_string();
            Error::Forbidden {
                policy: Some(policy),
                detail,
            }
        }
        CommandError::Rejected(
            e @ (ProvisioningError::ExtendHours { .. } | ProvisioningError::ExtendTooFar { .. }),
        ) => Error::invalid(
            "hours",
            e.to_string().trim_start_matches("hours: ").to_owned(),
        ),
        CommandError::Rejected(
            e @ (ProvisioningError::ExpiryPassed | ProvisioningError::ExpiryTooFar { .. }),
        ) => Error::invalid(
            "expires_at",
            e.to_string().trim_start_matches("expires_at: ").to_owned(),
        ),
        CommandError::Rejected(e) => Error::Conflict(e.to_string()),
        e => command_not_stored(e),
    }
}

/// A command the store could not commit: it lost every race, or the database failed.
pub fn command_not_stored<E: std::error::Error + Send + Sync + 'static>(
    e: CommandError<E>,
) -> Error {
    match e {
        CommandError::Conflict => {
            Error::Unavailable(format!("{e}; nothing was changed, retry the request"))
        }
        CommandError::Store(store::StoreError::Database(db)) => db.into(),
        e => Error::internal(e),
    }
}

impl From<CommandError<CatalogError>> for Error {
    fn from(e: CommandError<CatalogError>) -> Self {
        match e {
            CommandError::Rejected(e) => e.into(),
            e => command_not_stored(e),
        }
    }
}

/// A refused catalog change: unknown ids not found, duplicates a conflict, invalid fields.
impl From<CatalogError> for Error {
    fn from(e: CatalogError) -> Self {
        match e {
            CatalogError::UnknownProvider(_) | CatalogError::UnknownTemplate(..) => {
                Error::NotFound(e.to_string())
            }
            CatalogError::DuplicateProvider(_) | CatalogError::DuplicateTemplate(..) => {
                Error::Conflict(e.to_string())
            }
            CatalogError::Invalid(e) => e.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_extension_past_the_policy_is_forbidden_naming_the_policy() {
        let refused = ProvisioningError::ExtendPastPolicy {
            policy: "week-long".into(),
            hours: 168,
        };
        let detail = refused.to_string();
        let error = vm_command_failed(VmId::new(), CommandError::Rejected(refused));
        match error {
            Error::Forbidden { policy, detail: d } => {
                assert_eq!(policy.as_deref(), Some("week-long"));
                assert_eq!(d, detail);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_lost_race_is_unavailable_and_says_nothing_changed() {
        let error = vm_command_failed(VmId::new(), CommandError::Conflict);
        assert!(matches!(&error, Error::Unavailable(d) if d.contains("nothing was changed")));
    }
}
