//! The spinner of `--wait`: the VM's status and Terraform's latest line, redrawn in place on
//! a terminal; nothing but the status lines when stderr is a file or a pipe.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

/// One dot going round a braille cell, then the frame shown when the wait is over.
const FRAMES: &str = "⠁⠂⠄⡀⢀⠠⠐⠈ ";

pub struct Progress {
    bar: ProgressBar,
    status: String,
}

impl Progress {
    pub fn start(status: &str) -> Progress {
        let bar = if std::io::stderr().is_terminal() {
            let bar = ProgressBar::new_spinner();
            if let Ok(style) = ProgressStyle::with_template("{spinner} {elapsed} {wide_msg}") {
                bar.set_style(style.tick_chars(FRAMES));
            }
            bar.enable_steady_tick(Duration::from_millis(120));
            bar
        } else {
            ProgressBar::hidden()
        };
        bar.set_message(status.to_owned());
        Progress {
            bar,
            status: status.to_owned(),
        }
    }

    /// A line that stays (a status change), printed above the spinner.
    pub fn say(&self, line: &str) {
        self.bar.suspend(|| eprintln!("{line}"));
    }

    pub fn status(&mut self, status: &str) {
        status.clone_into(&mut self.status);
        self.bar.set_message(status.to_owned());
    }

    /// Terraform's latest line, beside the status.
    pub fn detail(&self, line: &str) {
        self.bar
            .set_message(format!("{}: {}", self.status, line.trim()));
    }

    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
