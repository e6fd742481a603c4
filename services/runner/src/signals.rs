//! SIGTERM and SIGINT: the runner asks Terraform to stop cleanly instead of dying under it.
//!
//! Killing the runner at once would close Terraform's pipes: its next write gets SIGPIPE,
//! and an apply dies without saving its state (orphaned cloud resources, a held lock).
//! Instead the runner sends Terraform one SIGINT per signal it gets (Terraform stops after
//! its current operations on the first, at once on the second), keeps reading and
//! publishing its output until it exits, and publishes the result. Terraform runs in a
//! process group of its own, so a Ctrl-C in a terminal reaches it only through the runner:
//! once, not twice.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use rustix::process::{kill_process, Pid, Signal};
use tokio::signal::unix::{signal, SignalKind};

/// The signals received so far, and the Terraform process they are passed on to.
#[derive(Clone, Default)]
pub(crate) struct Interrupts {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    received: AtomicU32,
    /// The running Terraform process, while there is one.
    child: Mutex<Option<u32>>,
}

impl Interrupts {
    /// Installs the handlers: from now on SIGTERM and SIGINT no longer end the runner (nor
    /// are they ignored, as they would be for a PID 1 without handlers).
    pub(crate) fn install() -> std::io::Result<Self> {
        let interrupts = Self::default();
        let mut term = signal(SignalKind::terminate())?;
        let mut int = signal(SignalKind::interrupt())?;
        let inner = interrupts.inner.clone();
        tokio::spawn(async move {
            loop {
                let name = tokio::select! {
                    Some(()) = term.recv() => "SIGTERM",
                    Some(()) = int.recv() => "SIGINT",
                    else => return,
                };
                let received = inner.received.fetch_add(1, Ordering::SeqCst) + 1;
                let child = *inner.child.lock().unwrap_or_else(|e| e.into_inner());
                tracing::warn!(
                    signal = name,
                    received,
                    "stopping: asking terraform to stop and reporting what it prints"
                );
                if let Some(pid) = child {
                    interrupt(pid);
                }
            }
        });
        Ok(interrupts)
    }

    /// A cancel of the job (from the daemon, not a signal): Terraform gets one interrupt,
    /// unless a stop was asked for already; no further Terraform command is started.
    pub(crate) fn cancel(&self, why: &str) {
        if self.inner.received.fetch_add(1, Ordering::SeqCst) > 0 {
            return;
        }
        let child = *self.inner.child.lock().unwrap_or_else(|e| e.into_inner());
        tracing::warn!(
            why,
            "stopping: asking terraform to stop and reporting what it prints"
        );
        if let Some(pid) = child {
            interrupt(pid);
        }
    }

    /// Whether a stop was asked for: no further Terraform command is started.
    pub(crate) fn stopping(&self) -> bool {
        self.inner.received.load(Ordering::SeqCst) > 0
    }

    /// Records the running Terraform process (`None` once it has been waited for). A
    /// process that starts after a signal is interrupted at once.
    pub(crate) fn set_child(&self, pid: Option<u32>) {
        *self.inner.child.lock().unwrap_or_else(|e| e.into_inner()) = pid;
        if let (Some(pid), true) = (pid, self.stopping()) {
            interrupt(pid);
        }
    }
}

fn interrupt(pid: u32) {
    let Some(pid) = i32::try_from(pid).ok().and_then(Pid::from_raw) else {
        return;
    };
    if let Err(e) = kill_process(pid, Signal::INT) {
        tracing::warn!(error = %e, "could not send SIGINT to terraform");
    }
}
