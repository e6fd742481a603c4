pub mod admin;
pub mod events;
pub mod health;
pub mod providers;
pub mod vms;

/// Who did it and in which request: the admin (the only identity for now), and the
/// request's id (the caller's `X-Request-ID` or a new one).
pub(crate) fn metadata(request_id: &crate::RequestId) -> store::Metadata {
    store::Metadata::new(store::Actor::Admin, request_id.as_str().to_owned())
}

/// Waits until a read model shows events up to `target`, so the answer to a command (and a
/// GET right after it) shows its effect. Gives up after a few seconds (the projector may be
/// down); the command is committed either way.
pub(crate) async fn wait_for_projection<F, Fut>(
    target: u64,
    read_model: &str,
    mut projected: F,
) -> Result<(), crate::ApiError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<u64, crate::ApiError>>,
{
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
    while projected().await? < target {
        if tokio::time::Instant::now() >= deadline {
            return Err(crate::ApiError::Unavailable(format!(
                "the change was recorded but {read_model} is behind; retry the GET"
            )));
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    Ok(())
}
