//! The system `ssh`, pinned to the VM's host keys and the job's deploy key. Every option
//! that could trust something else is off: no user or system configuration, no agent, no
//! host key learnt on first use.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use tokio::io::AsyncWriteExt;
use tokio::process::Command;
use tokio::sync::mpsc;

use super::plan::Target;
use crate::{Reporter, RunnerError};

/// How many of a step's last output lines a failure keeps.
pub(crate) const LAST_LINES: usize = domain::provisioning::MAX_LAST_LINES;

/// What ssh says when the VM's host key is not the pinned one.
pub(crate) const HOST_KEY_FAILED: &str = "Host key verification failed";

/// How to reach the VM.
pub(crate) struct Ssh {
    pub(crate) target: Target,
    pub(crate) key_file: PathBuf,
    pub(crate) known_hosts: PathBuf,
}

/// The last lines a command printed, for a failure's report.
#[derive(Default)]
pub(crate) struct LastLines(VecDeque<String>);

impl LastLines {
    fn push(&mut self, line: String) {
        if self.0.len() == LAST_LINES {
            self.0.pop_front();
        }
        self.0.push_back(line);
    }

    pub(crate) fn contains(&self, text: &str) -> bool {
        self.0.iter().any(|l| l.contains(text))
    }

    pub(crate) fn to_vec(&self) -> Vec<String> {
        self.0.iter().cloned().collect()
    }
}

impl Ssh {
    fn command(&self, remote: &str) -> Command {
        let mut cmd = Command::new("ssh");
        let option = |o: &str| ["-o".to_owned(), o.to_owned()];
        cmd.env_clear()
            .envs(std::env::vars().filter(|(n, _)| ["PATH", "HOME", "LANG"].contains(&n.as_str())))
            .args(["-F", "/dev/null", "-T", "-i"])
            .arg(&self.key_file)
            .args(["-p", &self.target.port.to_string()])
            .args(option("BatchMode=yes"))
            .args(option("StrictHostKeyChecking=yes"))
            .args(option(&format!(
                "UserKnownHostsFile={}",
                self.known_hosts.display()
            )))
            .args(option("GlobalKnownHostsFile=/dev/null"))
            .args(option("IdentitiesOnly=yes"))
            .args(option("IdentityAgent=none"))
            .args(option("ConnectTimeout=10"))
            .args(option("LogLevel=ERROR"))
            .arg(format!("{}@{}", self.target.user, self.target.address))
            .arg("--")
            .arg(as_root(&self.target.user, remote))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own group: a terminal's Ctrl-C reaches it through the runner, once.
            .process_group(0);
        cmd
    }

    /// Runs `remote` on the VM with `stdin`, publishing each line it prints as a line of
    /// the job (prefixed with `[name]`) and keeping the last ones; the exit code (255:
    /// ssh itself failed, such as on a host key that is not the pinned one).
    pub(crate) async fn stream(
        &self,
        remote: &str,
        stdin: &str,
        name: &str,
        out: &mut Reporter<'_>,
        last: &mut LastLines,
    ) -> Result<i32, RunnerError> {
        if out.interrupts.stopping() {
            return Ok(130);
        }
        let mut child = match self.command(remote).spawn() {
            Ok(child) => child,
            Err(e) => {
                let message = format!("could not start ssh: {e}");
                last.push(message.clone());
                out.log("error".into(), "runner".into(), message).await?;
                return Ok(127);
            }
        };
        out.interrupts.set_child(child.id());
        let writer = child.stdin.take().map(|mut pipe| {
            let input = stdin.as_bytes().to_vec();
            tokio::spawn(async move {
                let _ = pipe.write_all(&input).await;
                let _ = pipe.shutdown().await;
            })
        });
        let (tx, mut rx) = mpsc::channel::<(String, bool)>(256);
        let readers = [
            child
                .stdout
                .take()
                .map(|s| crate::terraform::read_lines(s, false, tx.clone())),
            child
                .stderr
                .take()
                .map(|s| crate::terraform::read_lines(s, true, tx)),
        ];
        let mut publish_error = None;
        while let Some((line, from_stderr)) = rx.recv().await {
            let line = out.redactor.apply(line.trim_end());
            last.push(line.clone());
            if publish_error.is_none() {
                let level = if from_stderr { "warn" } else { "info" };
                let message = format!("[{name}] {line}");
                if let Err(e) = out.log(level.into(), "taskserv".into(), message).await {
                    publish_error = Some(e);
                }
            }
        }
        for task in readers.into_iter().flatten() {
            let _ = task.await;
        }
        if let Some(task) = writer {
            let _ = task.await;
        }
        let code = child
            .wait()
            .await
            .map(|s| s.code().unwrap_or(130))
            .unwrap_or(-1);
        out.interrupts.set_child(None);
        match publish_error {
            Some(e) => Err(e),
            None => Ok(code),
        }
    }

    /// Runs `remote` and returns what it printed on stdout, published nowhere; `None` when
    /// it failed.
    pub(crate) async fn capture(&self, remote: &str) -> Option<String> {
        let mut cmd = self.command(remote);
        cmd.stdin(Stdio::null()).stderr(Stdio::null());
        let output = cmd.output().await.ok()?;
        output
            .status
            .success()
            .then(|| String::from_utf8_lossy(&output.stdout).into_owned())
    }
}

/// `remote` as a command for the VM user's login shell, run as root: through `sudo -n`
/// (never a password prompt) unless the user is root.
fn as_root(user: &str, remote: &str) -> String {
    let quoted = format!("'{}'", remote.replace('\'', r"'\''"));
    match user {
        "root" => format!("sh -c {quoted}"),
        _ => format!("sudo -n sh -c {quoted}"),
    }
}

/// Writes the private key to `dir/deploy_key`, readable by its owner alone (ssh refuses a
/// key others may read).
pub(crate) fn write_key(dir: &Path, pem: &str) -> std::io::Result<PathBuf> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let path = dir.join("deploy_key");
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)?;
    file.write_all(pem.as_bytes())?;
    if !pem.ends_with('\n') {
        file.write_all(b"\n")?;
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_remote_command_runs_as_root_through_sudo_unless_the_user_is_root() {
        assert_eq!(as_root("root", "echo 'a'"), r"sh -c 'echo '\''a'\'''");
        assert_eq!(as_root("ubuntu", "id -u"), "sudo -n sh -c 'id -u'");
    }

    #[test]
    fn a_failure_keeps_the_last_twenty_lines() {
        let mut last = LastLines::default();
        for i in 0..30 {
            last.push(format!("line {i}"));
        }
        let kept = last.to_vec();
        assert_eq!(kept.len(), 20);
        assert_eq!(kept[0], "line 10");
        assert!(last.contains("line 29") && !last.contains("line 9\n"));
    }
}
