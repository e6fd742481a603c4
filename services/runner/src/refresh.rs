//! A refresh job: reads what the cloud has and records it in the state, changing nothing
//! in the cloud, and reports what changed outside Terraform. Terraform from 0.15.4 runs it
//! through a saved plan, so that the drift can be read from the plan between the two
//! streamed commands:
//!
//! 1. `terraform plan -refresh-only -json -out=<plan>`, streamed like every command;
//! 2. `terraform show -json <plan>`, read here and never published (the document holds
//!    every value in plain text, variables and sensitive values included): its
//!    `resource_drift` gives the drifted resources and their changed attributes;
//! 3. `terraform apply -json <plan>`, streamed, which writes the refreshed state.
//!
//! Older Terraform runs `terraform refresh`, which reports no drift. The exit codes of the
//! streamed commands decide the outcome; reading the drift never fails the job.

use std::path::PathBuf;
use std::process::Stdio;

use domain::provisioning::{Diagnostic, DriftedResource};

use crate::terraform::{has_refresh_only, retry_while_locked, terraform, LOCK_TIMEOUT};
use crate::{drift, Reporter, RunnerConfig, RunnerError};

/// The saved plan, in the working directory. Removed once the job is done with it.
const PLAN_FILE: &str = "refresh.tfplan";

/// Runs the refresh; returns Terraform's exit code and the drift it found.
pub async fn run(
    config: &RunnerConfig,
    out: &mut Reporter<'_>,
    diagnostics: &mut Vec<Diagnostic>,
) -> Result<(i32, Vec<DriftedResource>), RunnerError> {
    if !has_refresh_only(config).await {
        let code = crate::terraform::run_action(config, out, diagnostics).await?;
        return Ok((code, vec![]));
    }
    let _plan = PlanFile(config.workdir.join(PLAN_FILE));
    let plan = || {
        let mut cmd = in_workspace(config);
        cmd.args([
            "plan",
            "-refresh-only",
            "-json",
            "-input=false",
            LOCK_TIMEOUT,
        ])
        .arg(format!("-out={PLAN_FILE}"));
        cmd
    };
    let code = retry_while_locked(plan, "plan", out, diagnostics).await?;
    if code != 0 {
        return Ok((code, vec![]));
    }
    let drift = read_drift(config, out).await?;
    let apply = || {
        let mut cmd = in_workspace(config);
        cmd.args(["apply", "-json", "-input=false", LOCK_TIMEOUT, PLAN_FILE]);
        cmd
    };
    let code = retry_while_locked(apply, "apply", out, diagnostics).await?;
    Ok((code, drift))
}

fn in_workspace(config: &RunnerConfig) -> tokio::process::Command {
    let mut cmd = terraform(config);
    cmd.env("TF_WORKSPACE", config.workspace());
    cmd
}

/// The drift of the saved plan; none (with a line saying why) when it cannot be read.
/// Says in one line what drifted: addresses and attribute names, never values.
async fn read_drift(
    config: &RunnerConfig,
    out: &mut Reporter<'_>,
) -> Result<Vec<DriftedResource>, RunnerError> {
    let mut cmd = in_workspace(config);
    cmd.args(["show", "-json", PLAN_FILE])
        .stdin(Stdio::null())
        .stderr(Stdio::null());
    let document = match cmd.output().await {
        Ok(output) if output.status.success() => {
            serde_json::from_slice::<serde_json::Value>(&output.stdout).ok()
        }
        _ => None,
    };
    let Some(document) = document else {
        let message = "could not read the drift from the saved plan (terraform show -json \
                       failed); the refresh goes on without it";
        out.log("warn".into(), "runner".into(), message.into())
            .await?;
        return Ok(vec![]);
    };
    let drift = drift::from_plan(&document);
    if !drift.is_empty() {
        let summary: Vec<String> = drift
            .iter()
            .map(|r| match r.attributes.is_empty() {
                true => format!("{} ({})", r.address, r.action),
                false => format!("{} ({}: {})", r.address, r.action, r.attributes.join(", ")),
            })
            .collect();
        let message = format!(
            "changed outside Terraform: {} resource(s): {}",
            drift.len(),
            summary.join("; ")
        );
        out.log("warn".into(), "runner".into(), message).await?;
    }
    Ok(drift)
}

/// Removes the saved plan when dropped, whatever happened: it holds the variables' values.
struct PlanFile(PathBuf);

impl Drop for PlanFile {
    fn drop(&mut self) {
        match std::fs::remove_file(&self.0) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                tracing::warn!(error = %e, path = %self.0.display(), "could not remove the saved plan")
            }
        }
    }
}
