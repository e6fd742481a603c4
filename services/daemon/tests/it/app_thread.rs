//! The application under test runs on a runtime of its own, on a thread of its own, so that
//! `TestApp::drop` can block until it stopped: with `#[tokio::test]` the test's runtime has
//! one thread, and blocking it would stop an application that ran there too.

use std::time::Duration;

use daemon::{Application, Config, Roles};
use secrecy::SecretString;
use tokio_util::sync::CancellationToken;

/// How long a stopping application may take before the test fails.
const STOP_TIMEOUT: Duration = Duration::from_secs(30);

/// The application's thread: cancelling `cancel` stops it; `ended` disconnects when the
/// thread ends, panic or not.
pub struct Running {
    cancel: CancellationToken,
    ended: std::sync::mpsc::Receiver<()>,
    thread: std::thread::JoinHandle<Result<(), String>>,
}

impl Running {
    /// Stops the application and waits for it; what went wrong in it, if anything.
    pub fn stop(self) -> Result<(), String> {
        self.cancel.cancel();
        if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
            self.ended.recv_timeout(STOP_TIMEOUT)
        {
            return Err(format!(
                "the application did not stop within {STOP_TIMEOUT:?}"
            ));
        }
        match self.thread.join() {
            Ok(result) => result,
            Err(panic) => Err(match panic.downcast_ref::<String>() {
                Some(message) => format!("the application panicked: {message}"),
                None => format!("the application panicked: {panic:?}"),
            }),
        }
    }
}

/// Builds and runs the application on its own thread and runtime; its port and shutdown
/// token once it listens, or why it did not start.
pub async fn run_on_own_thread(
    config: Config,
    roles: Roles,
    token: String,
) -> Result<(u16, Running), daemon::StartupError> {
    let (started_tx, started) = tokio::sync::oneshot::channel();
    let (ended_tx, ended) = std::sync::mpsc::channel::<()>();
    let thread = std::thread::spawn(move || {
        let _ended = ended_tx;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            match Application::build(config, roles, Some(SecretString::from(token))).await {
                Ok(app) => {
                    let _ = started_tx.send(Ok((app.port(), app.shutdown_token())));
                    app.run_until_stopped().await.map_err(|e| e.to_string())
                }
                Err(e) => {
                    let _ = started_tx.send(Err(e));
                    Ok(())
                }
            }
        })
    });
    let (port, cancel) = started.await.expect("the application thread answers")?;
    Ok((
        port,
        Running {
            cancel,
            ended,
            thread,
        },
    ))
}
