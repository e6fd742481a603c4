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

/// Where a client resumes: the `since` query parameter (an empty one counts as absent),
/// else its `Last-Event-ID` header (what a browser's EventSource sends when it
/// reconnects), else nowhere (only what comes). A `Last-Event-ID` that is not a whole
/// number from 0 to `max` is a 422 naming it, even when `since` wins.
pub fn resume_point(
    headers: &HeaderMap,
    since: Option<&str>,
    max: u64,
) -> Result<Option<String>, crate::ApiError> {
    let last_event_id = match headers.get("last-event-id") {
        None => None,
        Some(value) => {
            let id = value
                .to_str()
                .ok()
                .map(str::trim)
                .filter(|v| v.parse::<u64>().is_ok_and(|n| n <= max))
                .ok_or_else(|| crate::ApiError::Invalid {
                    field: "Last-Event-ID".into(),
                    reason: format!("must be a whole number from 0 to {max}"),
                })?;
            Some(id.to_owned())
        }
    };
    let since = since.map(str::trim).filter(|v| !v.is_empty());
    Ok(since.map(str::to_owned).or(last_event_id))
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
    store::feed::cursor_of(&state.app.pool, position)
        .await?
        .map(Some)
        .ok_or_else(unknown)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(last_event_id: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert("last-event-id", last_event_id.parse().unwrap());
        headers
    }

    #[test]
    fn a_malformed_last_event_id_is_refused_even_when_since_is_given() {
        for bad in ["-1", "9223372036854775808", "x", ""] {
            for since in [None, Some(""), Some("3")] {
                let refused = resume_point(&headers(bad), since, i64::MAX as u64);
                assert!(refused.is_err(), "{bad:?} with since {since:?}");
            }
        }
        let point = resume_point(&headers("7"), Some("3"), 10).unwrap();
        assert_eq!(point.as_deref(), Some("3"), "since wins");
        let point = resume_point(&headers("7"), Some(""), 10).unwrap();
        assert_eq!(point.as_deref(), Some("7"), "an empty since is absent");
        assert!(resume_point(&headers("11"), None, 10).is_err());
        assert_eq!(resume_point(&HeaderMap::new(), Some(""), 10).unwrap(), None);
    }
}
