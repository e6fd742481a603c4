//! End to end: the built `provisioning` binary against the real daemon (Postgres, NATS
//! JetStream and Terraform on the `local` provider), one daemon per test.

mod account;
mod admin;
mod catalog;
mod cluster_scale;
mod clusters;
mod daemon;
mod life;
mod provider;
mod proxy;
mod refusals;
mod sign_in;
mod taskserv;
mod terminal;
mod verbs;

use std::process::Stdio;

use tokio::io::AsyncWriteExt;

/// What a run of the CLI did.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// Fails the test, showing the run, unless it exited `code`.
    pub fn expect(self, code: i32) -> Run {
        assert_eq!(self.code, code, "{self:#?}");
        self
    }
}

/// Runs `provisioning args` with `env` (and nothing of the test's own `PROVISIONING_*`), its
/// config in `config_dir`, feeding it `stdin`.
pub async fn cli(
    config_dir: &std::path::Path,
    env: &[(&str, &str)],
    args: &[&str],
    stdin: Option<&str>,
) -> Run {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_provisioning"));
    command
        .args(args)
        .env_remove("PROVISIONING_URL")
        .env_remove("PROVISIONING_TOKEN")
        .env("XDG_CONFIG_HOME", config_dir)
        .env("NO_COLOR", "1")
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().expect("the CLI starts");
    let mut input = child.stdin.take().unwrap();
    if let Some(text) = stdin {
        input.write_all(text.as_bytes()).await.unwrap();
    }
    drop(input);
    finish(child).await
}

/// What `child` did, once it ended (within 3 minutes).
pub async fn finish(child: tokio::process::Child) -> Run {
    let output = tokio::time::timeout(
        std::time::Duration::from_secs(180),
        child.wait_with_output(),
    )
    .await
    .expect("the CLI ends within 3 minutes")
    .unwrap();
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

pub const SSH_KEY: &str =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEpXvA+cP8hcraKOw+cO1rzIpAv7ms7vMYjhAKF7Qed/ test@example";
