//! Reading Server-Sent Events as a client does: blocks separated by a blank line, with
//! `id:`, `event:` and `data:` fields; comment lines (keep-alives) carry none.

use std::time::Duration;

use futures::StreamExt;
use serde_json::Value;

/// One event: its id, its name and its data.
#[derive(Debug, Clone)]
pub struct SseEvent {
    pub id: String,
    pub event: String,
    pub data: Value,
}

impl SseEvent {
    /// The id as a number (a sequence or a position).
    pub fn number(&self) -> i64 {
        self.id.parse().expect("a numeric id")
    }
}

/// Takes the complete events out of `buffer`, leaving a partial one in it.
pub fn parse(buffer: &mut String) -> Vec<SseEvent> {
    let mut events = vec![];
    while let Some(end) = buffer.find("\n\n") {
        let block: String = buffer.drain(..end + 2).collect();
        let field = |name: &str| {
            block
                .lines()
                .find_map(|l| l.strip_prefix(&format!("{name}:")))
                .map(|v| v.trim().to_owned())
        };
        let (Some(event), Some(data)) = (field("event"), field("data")) else {
            continue; // a keep-alive comment
        };
        events.push(SseEvent {
            id: field("id").unwrap_or_default(),
            event,
            data: serde_json::from_str(&data).unwrap(),
        });
    }
    events
}

/// Reads events until `done` says so for one (which is kept); fails after 60 s of quiet or
/// if the stream ends.
pub async fn read_until(
    response: reqwest::Response,
    mut done: impl FnMut(&SseEvent) -> bool,
) -> Vec<SseEvent> {
    assert_eq!(response.status(), 200);
    let mut body = response.bytes_stream();
    let mut buffer = String::new();
    let mut events = vec![];
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let chunk = tokio::time::timeout_at(deadline, body.next())
            .await
            .expect("the stream went quiet")
            .expect("the stream ended")
            .unwrap();
        buffer.push_str(&String::from_utf8_lossy(&chunk));
        for event in parse(&mut buffer) {
            let stop = done(&event);
            events.push(event);
            if stop {
                return events;
            }
        }
    }
}
