//! Safe retries: a command sent again with the same idempotency key gets the first answer,
//! whichever face it came through. The answer is the face's (its status and body, written
//! by the face from the use case's result) and is kept with the command's events, in one
//! transaction; the layer never reads it, so a replay is the same bytes as the first answer.

use crate::Error;

/// A face's answer to a command, as it was given and kept under the key.
pub type Kept = store::idempotency::Answer;

/// A command's idempotency key, what the request was, and how the face answers the
/// command's result `T`.
pub struct Idempotent<'a, T> {
    /// The key the client chose: 1 to 255 visible ASCII characters.
    pub key: &'a str,
    /// What the request was, as the face tells it (with the caller): the same key with
    /// another request is refused.
    pub request: &'a str,
    /// The face's answer to the result, kept for a replay.
    pub answer: &'a (dyn Fn(&T) -> Kept + Send + Sync),
}

/// What a command did: its result, or the answer kept for the same request earlier.
#[derive(Debug)]
pub enum Outcome<T> {
    Done(T),
    Replayed(Kept),
}

/// The answer kept under `key` for the same request; refused when the key was used for
/// another request; `None` when the key is new.
pub async fn kept(pool: &store::PgPool, key: &str, request: &str) -> Result<Option<Kept>, Error> {
    match store::idempotency::find(pool, key).await? {
        None => Ok(None),
        Some(kept) if kept.fingerprint == request => Ok(Some(kept.answer)),
        Some(_) => Err(Error::invalid(
            "Idempotency-Key",
            format!(
                "{key:?} was used for another request in the last {} hours; \
                 use a new key for a new request",
                store::idempotency::KEEP_FOR.as_secs() / 3600
            ),
        )),
    }
}

/// The answer kept under `key` by a concurrent request with the same key, which committed
/// first.
pub(crate) async fn answered_meanwhile(
    pool: &store::PgPool,
    key: &str,
    request: &str,
) -> Result<Kept, Error> {
    kept(pool, key, request).await?.ok_or_else(|| {
        Error::Unavailable(format!("a request with Idempotency-Key {key:?} is running"))
    })
}

/// Each new key clears a few expired ones, so the table stays as small as a day's keys.
pub(crate) fn expire_some(pool: &store::PgPool) {
    let pool = pool.clone();
    tokio::spawn(async move {
        if let Err(error) = store::idempotency::expire(&pool, 100).await {
            tracing::warn!(%error, "could not delete expired idempotency keys");
        }
    });
}
