pub mod admin;
pub mod auth;
pub mod callbacks;
pub mod events;
pub mod health;
pub mod providers;
pub mod ssh_keys;
pub mod vms;

/// Who did it and in which request: the admin (the only identity for now), and the
/// request's id (the caller's `X-Request-ID` or a new one).
pub(crate) fn metadata(request_id: &crate::RequestId) -> store::Metadata {
    store::Metadata::new(store::Actor::Admin, request_id.as_str().to_owned())
}
