//! What the Server-Sent Events streams share: a bounded queue per client that cuts off a
//! client that stops reading (with a last event telling it where to resume), the resume
//! point (`Last-Event-ID` or `?since=`), and the hub that follows the commit order for the
//! streams of many VMs at once.

pub mod hub;
mod outbox;

use std::time::Duration;

use axum::http::HeaderMap;

pub use hub::{Follower, Hub};
pub use outbox::{outbox, Outbox, Stopped};

/// A comment line this often keeps proxies from closing a quiet stream.
pub const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// Where a client resumes: the `since` query parameter, else its `Last-Event-ID` header
/// (what a browser's EventSource sends when it reconnects), else nowhere (only what comes).
pub fn resume_point(headers: &HeaderMap, since: Option<&str>) -> Option<String> {
    since
        .map(str::to_owned)
        .or_else(|| {
            headers
                .get("last-event-id")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        })
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
}

/// The place in the commit order of the position a client resumes from (`0`: before the
/// first event).
pub async fn resume_cursor(
    state: &crate::AppState,
    resume: Option<&str>,
) -> Result<Option<store::feed::Cursor>, crate::ApiError> {
    let Some(id) = resume else { return Ok(None) };
    let unknown = || crate::ApiError::Invalid {
        field: "since".into(),
        reason: format!("{id:?} is not the id (a position) of an event of this stream"),
    };
    let position = id.parse::<i64>().map_err(|_| unknown())?;
    if position == 0 {
        // From the first event.
        return Ok(Some(store::feed::Cursor::default()));
    }
    store::feed::cursor_of(&state.pool, position)
        .await?
        .map(Some)
        .ok_or_else(unknown)
}
