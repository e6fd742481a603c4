//! The Terraform commands of a job.

use std::collections::BTreeMap;
use std::process::Stdio;

use domain::provisioning::{Diagnostic, JobAction, Severity};
use secrecy::ExposeSecret;
use tokio::io::BufReader;
use tokio::process::Command;
use tokio::sync::mpsc;

use crate::lines::{parse_line, read_line};
use crate::{Reporter, RunnerConfig, RunnerError};

pub(crate) fn terraform(config: &RunnerConfig) -> Command {
    let mut cmd = Command::new(&config.terraform_bin);
    cmd.current_dir(&config.workdir)
        .env("TF_IN_AUTOMATION", "1")
        .env("CHECKPOINT_DISABLE", "1")
        .env_remove(crate::env::BACKEND_PASSWORD)
        .env_remove(crate::env::NATS_PASSWORD)
        .env_remove(crate::env::SIGNING_KEY)
        .env_remove(crate::env::DEPLOY_KEY)
        .stdin(Stdio::null())
        // A group of its own: a terminal's Ctrl-C (or a signal to the runner's group) reaches
        // Terraform only through the runner, once (see `signals`).
        .process_group(0);
    if let Some(password) = &config.backend_password {
        cmd.env("PGPASSWORD", password.expose_secret());
    }
    cmd
}

/// How long Terraform waits for a state lock held by another run.
pub(crate) const LOCK_TIMEOUT: &str = "-lock-timeout=10m";

/// `terraform init` with the `pg` backend. Runs without `TF_WORKSPACE`: init fails when it
/// names a workspace that does not exist yet.
pub async fn init(
    config: &RunnerConfig,
    out: &mut Reporter<'_>,
    diagnostics: &mut Vec<Diagnostic>,
) -> Result<i32, RunnerError> {
    let command = || {
        let mut cmd = terraform(config);
        cmd.env_remove("TF_WORKSPACE")
            .args(["init", "-input=false", "-no-color"])
            .arg(format!(
                "-backend-config=conn_str={}",
                config.backend_conn_str
            ));
        cmd
    };
    retry_while_locked(command, "init", out, diagnostics).await
}

/// The job's Terraform command in the VM's workspace, which the `pg` backend creates on
/// first use: `apply`, `destroy`, or for a refresh `terraform refresh` (Terraform before
/// 0.15.4; later ones refresh through a saved plan, see [`crate::refresh`]).
pub async fn run_action(
    config: &RunnerConfig,
    out: &mut Reporter<'_>,
    diagnostics: &mut Vec<Diagnostic>,
) -> Result<i32, RunnerError> {
    let args: &[&str] = match config.action {
        JobAction::Create => &["apply", "-auto-approve"],
        JobAction::Destroy => &["destroy", "-auto-approve"],
        JobAction::Refresh => &["refresh"],
        JobAction::Install => {
            diagnostics.push(Diagnostic {
                severity: domain::provisioning::Severity::Error,
                summary: "an install job runs no Terraform action".into(),
                detail: String::new(),
            });
            return Ok(1);
        }
    };
    let command = || {
        let mut cmd = terraform(config);
        cmd.env("TF_WORKSPACE", config.workspace())
            .args(args)
            .args(["-json", "-input=false", LOCK_TIMEOUT]);
        cmd
    };
    retry_while_locked(command, args[0], out, diagnostics).await
}

/// Whether this Terraform has `-refresh-only` plans (0.15.4 and later; OpenTofu has them
/// from its first version), from `terraform version -json`.
pub(crate) async fn has_refresh_only(config: &RunnerConfig) -> bool {
    let mut cmd = terraform(config);
    cmd.args(["version", "-json"]).stderr(Stdio::null());
    let Ok(output) = cmd.output().await else {
        return false;
    };
    let version: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap_or_default();
    version
        .get("terraform_version")
        .and_then(|v| v.as_str())
        .is_some_and(refresh_only_since)
}

/// `version` (`1.0.3`, `0.15.4-beta1`) is 0.15.4 or later.
fn refresh_only_since(version: &str) -> bool {
    let numbers: Vec<u32> = version
        .split(['.', '-'])
        .take(3)
        .map(|n| n.parse().unwrap_or(0))
        .collect();
    numbers.as_slice() >= [0, 15, 4].as_slice()
}

/// Whether an error comes from another run using the backend at the same moment, told by
/// Terraform's own messages only: a state lock held by another run (the lock diagnostic, or
/// the `pg` backend's lock for creating a workspace), or two first runs creating the
/// backend's schema and table together (Postgres refuses the second with a duplicate key in
/// its system catalogs, `pg_namespace`, `pg_type` or `pg_class`, or, when the first commits
/// between the second's check and its insert, with `relation "states" already exists` for
/// one of the backend's own objects). The daemon prepares those objects before it starts
/// runners; this covers a state database emptied or replaced while it runs. Any other
/// error, even one that mentions a lock, a block or an existing relation, is the
/// configuration's and is not run again.
fn contended(summary: &str) -> bool {
    const HELD_LOCK: &[&str] = &[
        "Error acquiring the state lock",
        "failed to lock state in Postgres",
        "already locked for workspace creation",
    ];
    const CATALOG_RACE: &str = "duplicate key value violates unique constraint \"pg_";
    const BACKEND_OBJECTS_MADE_MEANWHILE: &[&str] = &[
        "pq: schema \"terraform_remote_state\" already exists",
        "pq: relation \"global_states_id_seq\" already exists",
        "pq: relation \"states\" already exists",
        "pq: relation \"states_pkey\" already exists",
        "pq: relation \"states_name_key\" already exists",
        "pq: relation \"states_by_name\" already exists",
    ];
    HELD_LOCK.iter().any(|m| summary.contains(m))
        || summary.contains(CATALOG_RACE)
        || BACKEND_OBJECTS_MADE_MEANWHILE
            .iter()
            .any(|m| summary.contains(m))
}

/// Runs a command again while it fails on a state lock. The `pg` backend takes one lock for
/// creating any workspace of its database, neither Terraform 1.0's `init` nor the creation
/// of a workspace honours `-lock-timeout`, and the first runs on a new database race to
/// create the backend's table: runners take turns here.
/// Running again is safe: a run that could not lock the state changed nothing, and an
/// apply converges.
pub(crate) async fn retry_while_locked(
    command: impl Fn() -> Command,
    name: &str,
    out: &mut Reporter<'_>,
    diagnostics: &mut Vec<Diagnostic>,
) -> Result<i32, RunnerError> {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(600);
    loop {
        let mut attempt = vec![];
        let code = stream(command(), out, &mut attempt).await?;
        let locked = code != 0 && attempt.iter().any(|d| contended(&d.summary));
        if locked && tokio::time::Instant::now() < deadline && !out.interrupts.stopping() {
            let message = format!("the state is locked by another run; trying {name} again in 2 s");
            out.log("info".into(), "runner".into(), message).await?;
            tokio::time::sleep(std::time::Duration::from_secs(2)).await;
            continue;
        }
        diagnostics.extend(attempt);
        return Ok(code);
    }
}

/// The non-sensitive outputs of the workspace. Its text is never published: sensitive
/// values are in it.
pub async fn outputs(config: &RunnerConfig) -> BTreeMap<String, serde_json::Value> {
    let mut cmd = terraform(config);
    cmd.env("TF_WORKSPACE", config.workspace())
        .args(["output", "-json"])
        .stderr(Stdio::null());
    let Ok(output) = cmd.output().await else {
        return BTreeMap::new();
    };
    let all: BTreeMap<String, serde_json::Value> =
        serde_json::from_slice(&output.stdout).unwrap_or_default();
    all.into_iter()
        .filter(|(_, o)| {
            !o.get("sensitive")
                .and_then(|s| s.as_bool())
                .unwrap_or(false)
        })
        .filter_map(|(name, o)| o.get("value").cloned().map(|v| (name, v)))
        .collect()
}

/// Runs a command, publishing each stdout and stderr line as it comes; returns the exit code.
async fn stream(
    mut cmd: Command,
    out: &mut Reporter<'_>,
    diagnostics: &mut Vec<Diagnostic>,
) -> Result<i32, RunnerError> {
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    if out.interrupts.stopping() {
        let message = "stopped (by a signal or a cancel) before terraform started".to_owned();
        diagnostics.push(Diagnostic {
            severity: Severity::Error,
            summary: message.clone(),
            detail: String::new(),
        });
        out.log("error".into(), "runner".into(), message).await?;
        return Ok(130);
    }
    let mut child = match cmd.spawn() {
        Ok(child) => child,
        Err(e) => {
            let message = format!("could not start terraform: {e}");
            diagnostics.push(Diagnostic {
                severity: Severity::Error,
                summary: message.clone(),
                detail: String::new(),
            });
            out.log("error".into(), "runner".into(), message).await?;
            return Ok(127);
        }
    };
    out.interrupts.set_child(child.id());
    let (tx, mut rx) = mpsc::channel::<(String, bool)>(256);
    let stdout = child
        .stdout
        .take()
        .map(|s| read_lines(s, false, tx.clone()));
    let stderr = child.stderr.take().map(|s| read_lines(s, true, tx));
    let mut plain_errors = vec![];
    // If publishing fails, Terraform still runs to its end (an abandoned apply would leave
    // resources and a state lock behind); the error is returned once it has.
    let mut publish_error = None;
    while let Some((text, from_stderr)) = rx.recv().await {
        let parsed = parse_line(&text, from_stderr);
        for value in parsed.sensitive_values.iter().cloned() {
            out.redactor.add(value);
        }
        match parsed.diagnostic.clone() {
            Some(d) => diagnostics.push(d),
            None if parsed.message.starts_with("Error: ") => {
                plain_errors.push(parsed.message.clone())
            }
            None => {}
        }
        if publish_error.is_none() {
            if let Err(e) = out.log(parsed.level, parsed.kind, parsed.message).await {
                tracing::error!(error = %e, "could not publish; letting terraform finish");
                publish_error = Some(e);
            }
        }
    }
    for task in [stdout, stderr].into_iter().flatten() {
        let _ = task.await;
    }
    let code = child
        .wait()
        .await
        .map(|s| s.code().unwrap_or(-1))
        .unwrap_or(-1);
    out.interrupts.set_child(None);
    if let Some(e) = publish_error {
        return Err(e);
    }
    if code != 0 && !diagnostics.iter().any(|d| d.severity == Severity::Error) {
        // Plain-text commands (init) print their errors as `Error: summary`.
        diagnostics.extend(plain_errors.into_iter().map(|m| Diagnostic {
            severity: Severity::Error,
            summary: m.trim_start_matches("Error: ").to_owned(),
            detail: String::new(),
        }));
    }
    Ok(code)
}

/// Reads a pipe to its end, sending each non-empty line. It never stops early: a closed
/// pipe would kill Terraform with SIGPIPE at its next write. Lines nobody receives any more
/// are read and dropped.
pub(crate) fn read_lines(
    pipe: impl tokio::io::AsyncRead + Unpin + Send + 'static,
    from_stderr: bool,
    tx: mpsc::Sender<(String, bool)>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut reader = BufReader::new(pipe);
        let mut buf = Vec::new();
        loop {
            let line = match read_line(&mut reader, &mut buf).await {
                Ok(Some(line)) => line,
                Ok(None) => return,
                Err(e) => {
                    tracing::warn!(error = %e, "could not read terraform's output");
                    return;
                }
            };
            if !line.trim().is_empty() && !tx.is_closed() {
                let _ = tx.send((line, from_stderr)).await;
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::{contended, refresh_only_since};

    #[test]
    fn refresh_only_is_used_from_terraform_0_15_4() {
        for version in ["0.15.4", "1.0.3", "1.11.0", "2.0.0"] {
            assert!(refresh_only_since(version), "{version}");
        }
        for version in ["0.15.3", "0.14.11", "0.12.31"] {
            assert!(!refresh_only_since(version), "{version}");
        }
    }

    #[test]
    fn a_held_state_lock_is_contention() {
        assert!(contended("Error acquiring the state lock"));
        assert!(contended(
            "failed to lock state in Postgres: Already locked for workspace creation: vm-1"
        ));
        assert!(contended(
            "Cannot lock workspace; already locked for workspace creation: vm-1"
        ));
    }

    #[test]
    fn two_first_runs_creating_the_backend_table_are_contention() {
        assert!(contended(
            "Failed to get existing workspaces: pq: duplicate key value violates unique constraint \"pg_type_typname_nsp_index\""
        ));
        assert!(contended(
            "pq: duplicate key value violates unique constraint \"pg_namespace_nspname_index\""
        ));
        // Seen on a load run: the first run committed the table between the second's
        // `IF NOT EXISTS` check and its insert.
        assert!(contended("pq: relation \"states\" already exists"));
        assert!(contended("pq: relation \"states_by_name\" already exists"));
        assert!(contended(
            "pq: schema \"terraform_remote_state\" already exists"
        ));
    }

    #[test]
    fn errors_that_only_mention_a_lock_or_a_block_are_not_contention() {
        for summary in [
            "Unsupported block type",
            "Invalid block definition",
            "clock skew",
            "Blocks of type \"lock\" are not expected here",
            "Error releasing the state lock",
            "pq: duplicate key value violates unique constraint \"instances_pkey\"",
            "pq: relation \"instances\" already exists",
            "resource already exists",
        ] {
            assert!(!contended(summary), "{summary}");
        }
    }
}
