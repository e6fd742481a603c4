//! What every `--wait` shares, a VM's or a cluster's: following its stream with the
//! spinner until the awaited change succeeds or fails, Ctrl-C stopping the wait (nothing
//! is cancelled), then showing it once its read model caught up.

use std::time::Duration;

use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::time::Instant;

use crate::args::Format;
use crate::client::Api;
use crate::error::CliError;
use crate::follow::{follow_stream_after, Step, Verdict};
use crate::output;
use crate::progress::Progress;
use crate::wire::{read, Event};

/// How long the read model may take to show what the stream told.
const SETTLING: Duration = Duration::from_secs(5);

/// A stream to follow until a verdict.
pub struct Following<'a> {
    /// The stream's path, e.g. `/api/v1/vms/{id}/stream`.
    pub path: String,
    /// Follow from the event after this sequence (from the first with `None`).
    pub after: Option<u64>,
    /// The spinner's first status.
    pub status: String,
    /// Printed when Ctrl-C stops the wait: what goes on and how to follow it again.
    pub on_interrupt: &'a str,
}

/// Follows the stream, giving each event to `see` (which may print through the spinner)
/// until it says the change succeeded (`Ok(None)`) or failed (`Ok(Some(reason))`).
pub async fn follow_until(
    api: &Api,
    following: Following<'_>,
    mut see: impl FnMut(&Event, &mut Progress) -> Verdict,
) -> Result<Option<String>, CliError> {
    let mut failure = None;
    let mut progress = Progress::start(&following.status);
    let followed = follow_stream_after(api, &following.path, following.after, |event| {
        match see(event, &mut progress) {
            Verdict::Going => Step::Continue,
            Verdict::Succeeded => Step::Done(Ok(())),
            Verdict::Failed(reason) => {
                failure = Some(reason);
                Step::Done(Ok(()))
            }
        }
    });
    let interrupted = tokio::select! {
        result = followed => {
            result?;
            false
        }
        _ = tokio::signal::ctrl_c() => true,
    };
    progress.finish();
    if interrupted {
        eprintln!("{}", following.on_interrupt);
        return Err(CliError::Interrupted);
    }
    Ok(failure)
}

/// Prints what `GET path` answers once its `status` is one of `settled` (the stream is
/// read from the events, `GET` from a read model that follows them a moment later), or as
/// it is after [`SETTLING`]. `what` names it in errors; `details` is its table form.
pub async fn show_settled<T: DeserializeOwned>(
    api: &Api,
    format: Format,
    path: &str,
    what: &str,
    settled: &[&str],
    status: impl Fn(&T) -> String,
    details: impl Fn(&T) -> String,
) -> Result<(), CliError> {
    let deadline = Instant::now() + SETTLING;
    loop {
        let value: Value = api.get(path, &[]).await?;
        let item: T = read(&value, what)?;
        if settled.contains(&status(&item).as_str()) || Instant::now() >= deadline {
            return output::print(format, &value, |_| Ok(details(&item)));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
