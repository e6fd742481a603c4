pub mod admin;
pub mod auth;
pub mod callbacks;
pub mod events;
pub mod health;
pub mod me;
pub mod providers;
pub mod schemas;
pub mod ssh_keys;
pub mod tokens;
pub mod vms;

use crate::auth::Principal;

/// Who did it and in which request: the caller ([`Principal::actor`]), and the request's
/// id (the caller's `X-Request-ID` or a new one).
pub(crate) fn metadata(principal: &Principal, request_id: &crate::RequestId) -> store::Metadata {
    store::Metadata::new(principal.actor(), request_id.as_str().to_owned())
}
