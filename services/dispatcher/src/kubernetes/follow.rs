//! Following every object of a kind that matches a label selector: a list, then a watch
//! from the list's `resourceVersion`, again from the last version seen when a watch ends,
//! and from a new list when that version is too old (`410 Gone`) or a call fails. A small
//! `kube::runtime::watcher` without its cache, since the caller keeps only what it needs.

use std::fmt::Debug;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use kube::api::{ListParams, WatchEvent, WatchParams};
use kube::{Api, Resource};
use serde::de::DeserializeOwned;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// What a follow saw of one object.
#[derive(Debug)]
pub enum Seen<K> {
    /// Listed, added or modified: its state now.
    Present(K),
    /// Deleted: its last state.
    Deleted(K),
}

/// How long the API server keeps one watch open; it ends it then and we watch again.
const WATCH_SECS: u32 = 290;
/// The pause after a failed call, so that an API server away is not asked in a tight loop.
const RETRY_AFTER: Duration = Duration::from_secs(2);

/// Sends what it sees of the objects `selector` matches until cancelled or the receiver
/// is dropped.
pub async fn follow<K>(
    api: Api<K>,
    selector: &str,
    seen: mpsc::Sender<Seen<K>>,
    cancel: CancellationToken,
) where
    K: Resource + Clone + DeserializeOwned + Debug + Send + 'static,
    K::DynamicType: Default,
{
    let kind = K::kind(&Default::default()).into_owned();
    let list_params = ListParams::default().labels(selector);
    loop {
        let listed = tokio::select! {
            _ = cancel.cancelled() => return,
            listed = api.list(&list_params) => listed,
        };
        let mut version = match listed {
            Ok(list) => {
                for object in list.items {
                    if seen.send(Seen::Present(object)).await.is_err() {
                        return;
                    }
                }
                list.metadata.resource_version.unwrap_or_default()
            }
            Err(e) => {
                tracing::warn!(%kind, error = %e, "could not list the runner objects; trying again");
                if pause(&cancel).await {
                    return;
                }
                continue;
            }
        };
        // Watch from `version` until it is too old or a call fails: then list again.
        loop {
            let params = WatchParams::default().labels(selector).timeout(WATCH_SECS);
            let stream = tokio::select! {
                _ = cancel.cancelled() => return,
                stream = api.watch(&params, &version) => stream,
            };
            let opened = tokio::time::Instant::now();
            let mut stream = match stream {
                Ok(stream) => stream.boxed(),
                Err(e) => {
                    tracing::warn!(%kind, error = %e, "could not watch the runner objects; listing again");
                    break;
                }
            };
            let relist = loop {
                let event = tokio::select! {
                    _ = cancel.cancelled() => return,
                    event = stream.try_next() => event,
                };
                let (object, deleted) = match event {
                    // The server ended the watch (its timeout): go on from where it was.
                    Ok(None) => break false,
                    Ok(Some(WatchEvent::Added(o) | WatchEvent::Modified(o))) => (o, false),
                    Ok(Some(WatchEvent::Deleted(o))) => (o, true),
                    Ok(Some(WatchEvent::Bookmark(b))) => {
                        version = b.metadata.resource_version;
                        continue;
                    }
                    Ok(Some(WatchEvent::Error(status))) => {
                        if status.code != 410 {
                            tracing::warn!(%kind, error = %status.message, "the watch failed; listing again");
                        }
                        break true;
                    }
                    Err(e) => {
                        tracing::warn!(%kind, error = %e, "the watch failed; listing again");
                        break true;
                    }
                };
                if let Some(v) = object.meta().resource_version.clone() {
                    version = v;
                }
                let event = if deleted {
                    Seen::Deleted(object)
                } else {
                    Seen::Present(object)
                };
                if seen.send(event).await.is_err() {
                    return;
                }
            };
            if relist {
                break;
            }
            // A server that ends watches at once is not asked again in a tight loop.
            if opened.elapsed() < Duration::from_secs(1) && pause(&cancel).await {
                return;
            }
        }
        if pause(&cancel).await {
            return;
        }
    }
}

/// Waits [`RETRY_AFTER`]; whether the follow was cancelled meanwhile.
async fn pause(cancel: &CancellationToken) -> bool {
    tokio::select! {
        _ = cancel.cancelled() => true,
        _ = tokio::time::sleep(RETRY_AFTER) => false,
    }
}
