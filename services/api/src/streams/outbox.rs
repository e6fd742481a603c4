//! The queue between a stream's producer (a task reading NATS or the hub and the store) and
//! the client's connection. It holds at most a few events: when the client does not take
//! them within [`PATIENCE`], the producer stops and the stream ends with a `reconnect` event
//! naming the last id the client got, so a client that does not read costs a bounded amount
//! of memory and resumes without a gap when it comes back. A stream whose caller loses
//! their rights ends with an `end` event instead (see `streams::rights`).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::response::sse::Event;
use futures::{Stream, StreamExt};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tokio_util::sync::CancellationToken;

use super::rights::Lost;

/// Events a client may have waiting; enough to ride over a short pause in its reading.
pub const QUEUE: usize = 64;

/// How long a full queue may stay full before the client is cut off.
pub const PATIENCE: Duration = Duration::from_secs(5);

/// Why a producer stopped.
#[derive(Debug)]
pub enum Stopped {
    /// The client went away.
    ClientGone,
    /// The client did not read: the stream ends with a `reconnect` event.
    TooSlow,
    Store(store::sqlx::Error),
}

impl From<store::sqlx::Error> for Stopped {
    fn from(error: store::sqlx::Error) -> Self {
        Self::Store(error)
    }
}

/// The producer's side.
pub struct Outbox {
    tx: mpsc::Sender<Event>,
    last_id: Option<String>,
    /// Set when the client is cut off: the id it should resume from.
    cut_off: Arc<Mutex<Option<Farewell>>>,
}

/// The last event of a stream that did not just run out.
#[derive(Debug)]
enum Farewell {
    /// Cut off for not reading: resume from this id.
    Reconnect(Option<String>),
    /// The caller lost their rights.
    End(Lost),
}

/// Ends a stream for its caller's rights (from outside its producer).
#[derive(Debug, Clone)]
pub struct Ender {
    cut_off: Arc<Mutex<Option<Farewell>>>,
    end: CancellationToken,
}

impl Ender {
    /// Ends the stream now with an `end` event saying why; what was queued is dropped.
    pub fn end(&self, lost: Lost) {
        self.cut_off
            .lock()
            .expect("not poisoned")
            .get_or_insert(Farewell::End(lost));
        self.end.cancel();
    }
}

/// The client's side: the events, then a `reconnect` event if it was cut off.
pub type OutboxStream = std::pin::Pin<Box<dyn Stream<Item = Result<Event, axum::Error>> + Send>>;

/// A queue for one client that starts after `resumed_from` (the id it resumed from, if any);
/// its stream ends when `stopping` is cancelled, or when its [`Ender`] ends it.
pub fn outbox(
    resumed_from: Option<String>,
    stopping: &CancellationToken,
) -> (Outbox, OutboxStream, Ender) {
    let (tx, rx) = mpsc::channel(QUEUE);
    let cut_off = Arc::new(Mutex::new(None));
    let last = cut_off.clone();
    let end = stopping.child_token();
    let events = ReceiverStream::new(rx)
        .map(Ok)
        .take_until(end.clone().cancelled_owned());
    let farewell = futures::stream::once(async move {
        let farewell = last.lock().expect("not poisoned").take();
        farewell.map(|farewell| match farewell {
            Farewell::Reconnect(resume) => reconnect(resume),
            Farewell::End(lost) => lost.event(),
        })
    })
    .filter_map(|event| async move { event.map(Ok) });
    let ender = Ender {
        cut_off: cut_off.clone(),
        end,
    };
    let outbox = Outbox {
        tx,
        last_id: resumed_from,
        cut_off,
    };
    (outbox, Box::pin(events.chain(farewell)), ender)
}

fn reconnect(last_id: Option<String>) -> Event {
    let data = serde_json::json!({
        "reason": "the client did not read its events in time",
        "last_event_id": last_id,
    });
    let event = Event::default().event("reconnect").data(data.to_string());
    match last_id {
        Some(id) => event.id(id),
        None => event,
    }
}

impl Outbox {
    /// Queues `event` with SSE id `id`, waiting at most [`PATIENCE`] for room.
    pub async fn send(&mut self, id: String, event: Event) -> Result<(), Stopped> {
        match tokio::time::timeout(PATIENCE, self.tx.send(event.id(id.clone()))).await {
            Ok(Ok(())) => {
                self.last_id = Some(id);
                Ok(())
            }
            Ok(Err(_)) => Err(Stopped::ClientGone),
            Err(_) => {
                self.cut_off
                    .lock()
                    .expect("not poisoned")
                    .get_or_insert(Farewell::Reconnect(self.last_id.clone()));
                Err(Stopped::TooSlow)
            }
        }
    }

    /// Resolves when the client went away.
    pub async fn closed(&self) {
        self.tx.closed().await
    }
}
