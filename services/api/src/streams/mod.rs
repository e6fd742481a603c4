//! What the Server-Sent Events streams share: a bounded queue per client that cuts off a
//! client that stops reading (with a last event telling it where to resume), the resume
//! point (`Last-Event-ID` or `?since=`), the hub that follows the commit order for the
//! streams of many VMs at once, the caller's rights checked while a stream is open, and the
//! cap on the streams one caller holds.

pub mod hub;
mod outbox;
pub mod rights;
pub mod slots;

use std::time::Duration;

use axum::http::HeaderMap;
use futures::StreamExt;
use tokio_util::sync::CancellationToken;

pub use hub::{Follower, Hub};
pub use outbox::{outbox, Outbox, OutboxStream, Stopped};
pub use rights::Caller;
pub use slots::{Slot, Slots};

/// A stream for `caller`, holding `slot` while it is open: its queue, and a watch of the
/// caller's rights that ends it with an `end` event once they are lost.
pub fn open(
    state: &crate::AppState,
    caller: Caller,
    resumed_from: Option<String>,
    slot: Slot,
) -> (Outbox, OutboxStream) {
    let (outbox, events, ender) = outbox(resumed_from, &state.stopping);
    // Cancelled when the client's side is dropped: the watch ends with the stream.
    let gone = CancellationToken::new();
    let held = (slot, gone.clone().drop_guard());
    let watch = rights::watch(state.clone(), caller);
    tokio::spawn(async move {
        tokio::select! {
            lost = watch => ender.end(lost),
            _ = gone.cancelled() => {}
        }
    });
    let events = events.map(move |event| {
        let _ = &held;
        event
    });
    (outbox, Box::pin(events))
}

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
