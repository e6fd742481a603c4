pub mod admin;
pub mod health;
pub mod providers;
pub mod vms;

/// Who did it and in which request: the admin (the only identity for now), and the
/// caller's `X-Request-ID` or a new id.
pub(crate) fn metadata(headers: &axum::http::HeaderMap) -> store::Metadata {
    let correlation_id = headers
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty() && v.len() <= 128)
        .map(str::to_owned)
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    store::Metadata {
        actor: "admin".to_owned(),
        correlation_id,
    }
}
