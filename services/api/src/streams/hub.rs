//! One follower of the commit order per process, shared by every stream that watches many
//! VMs (`/vms/stream`, `/admin/stream`): it reads the events table as events commit (woken
//! by `LISTEN/NOTIFY`) and broadcasts them in batches, each naming the place it follows on
//! from. A stream that finds a batch not following its own place (it lagged behind the
//! broadcast, or resumed from an older id) reads what it missed from the store, so nothing
//! is lost and nothing is sent twice. The follower runs only while someone listens.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use store::feed::{self, Cursor, FeedEvent};
use store::PgPool;
use tokio::sync::broadcast;

/// Batches the broadcast keeps for slow listeners; one who falls further behind reads the
/// store instead. Small, so that the hub's memory stays bounded whatever its listeners do.
const KEPT_BATCHES: usize = 16;
/// Events per batch.
const BATCH: i64 = 200;
/// How long the follower waits for a notification before it looks anyway.
const POLL: Duration = Duration::from_secs(1);

/// Events that follow `after` in the commit order, up to `upto`.
#[derive(Debug)]
pub struct Batch {
    pub after: Cursor,
    pub upto: Cursor,
    pub events: Vec<FeedEvent>,
}

pub struct Hub {
    pool: PgPool,
    tx: broadcast::Sender<Arc<Batch>>,
    running: Mutex<bool>,
}

impl Hub {
    pub fn new(pool: PgPool) -> Arc<Self> {
        let (tx, _) = broadcast::channel(KEPT_BATCHES);
        Arc::new(Self {
            pool,
            tx,
            running: Mutex::new(false),
        })
    }

    /// The batches committed from now on; starts the follower if it is not running.
    pub fn subscribe(self: &Arc<Self>) -> broadcast::Receiver<Arc<Batch>> {
        let mut running = self.running.lock().expect("not poisoned");
        let rx = self.tx.subscribe();
        if !*running {
            *running = true;
            tokio::spawn(follow(self.clone()));
        }
        rx
    }

    pub fn pool(&self) -> &PgPool {
        &self.pool
    }
}

async fn follow(hub: Arc<Hub>) {
    let mut wakeup = feed::Wakeup::new(hub.pool.clone(), POLL);
    let mut cursor = loop {
        match feed::head(&hub.pool).await {
            Ok(cursor) => break cursor,
            Err(error) => {
                tracing::warn!(%error, "the stream hub cannot read the events table; retrying");
                tokio::time::sleep(POLL).await;
            }
        }
    };
    loop {
        {
            let mut running = hub.running.lock().expect("not poisoned");
            if hub.tx.receiver_count() == 0 {
                *running = false;
                return;
            }
        }
        let events = match feed::read_after(&hub.pool, cursor, BATCH).await {
            Ok(events) => events,
            Err(error) => {
                tracing::warn!(%error, "the stream hub cannot read the events table; retrying");
                tokio::time::sleep(POLL).await;
                continue;
            }
        };
        let full = events.len() as i64 == BATCH;
        if let Some(last) = events.last() {
            let upto = last.cursor;
            // No listener left is fine: the check above stops the follower.
            let _ = hub.tx.send(Arc::new(Batch {
                after: cursor,
                upto,
                events,
            }));
            cursor = upto;
        }
        if !full {
            wakeup.wait().await;
        }
    }
}

/// Where a stream is in the commit order, and how it gets the next events without a gap.
pub struct Follower {
    hub: Arc<Hub>,
    rx: broadcast::Receiver<Arc<Batch>>,
    /// The last place sent; `None` until the first batch when the stream starts live.
    sent: Option<Cursor>,
    /// A committed place not sent up to yet: the store is read up to it first.
    behind: Option<Cursor>,
}

impl Follower {
    /// Follows from `since` (exclusive: a resumed stream first gets everything committed
    /// after it), or from what commits next.
    pub async fn new(hub: &Arc<Hub>, since: Option<Cursor>) -> Result<Self, store::sqlx::Error> {
        // Subscribe before reading where the store is, so nothing falls in between.
        let rx = hub.subscribe();
        let behind = match since {
            Some(_) => Some(feed::head(hub.pool()).await?),
            None => None,
        };
        Ok(Self {
            rx,
            hub: hub.clone(),
            sent: since,
            behind,
        })
    }

    /// The next events in commit order, after the last ones returned (possibly none, when
    /// a batch held only what was sent already). Reads the store for what the broadcast no
    /// longer has. `None` when the hub is gone.
    pub async fn next(&mut self) -> Option<Result<Vec<FeedEvent>, store::sqlx::Error>> {
        if let (Some(sent), Some(target)) = (self.sent, self.behind) {
            if sent < target {
                return Some(self.read_up_to(sent, target).await);
            }
            self.behind = None;
        }
        let batch = loop {
            match self.rx.recv().await {
                Ok(batch) => break batch,
                // Fell behind: the next batch received is later; the gap is read from the
                // store.
                Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        };
        let sent = *self.sent.get_or_insert(batch.after);
        if batch.after > sent {
            // A gap between what was sent and this batch: all of it committed (the hub saw
            // past it), so the store has it.
            self.behind = Some(batch.upto);
            return Some(self.read_up_to(sent, batch.upto).await);
        }
        let events: Vec<FeedEvent> = batch
            .events
            .iter()
            .filter(|e| e.cursor > sent)
            .cloned()
            .collect();
        self.sent = Some(sent.max(batch.upto));
        Some(Ok(events))
    }

    async fn read_up_to(
        &mut self,
        sent: Cursor,
        target: Cursor,
    ) -> Result<Vec<FeedEvent>, store::sqlx::Error> {
        let events = feed::read_range(self.hub.pool(), sent, target, BATCH).await?;
        self.sent = Some(match events.last() {
            Some(last) => last.cursor,
            None => target,
        });
        Ok(events)
    }
}
