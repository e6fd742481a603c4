//! The taskservs of a create job's VM, installed at its first boot: each step of the plan
//! (`VmSpec.taskservs`) rendered with the catalog for the VM, the driver (`run.sh`) with the
//! step's callback URLs, all as files for cloud-init's `write_files`. The URLs carry tokens:
//! they go into the user data (as the other callback URLs do) and into
//! [`CALLBACKS_FILE`] for the simulated boot of `local` VMs, and nowhere else.

use std::collections::BTreeMap;
use std::path::Path;

use base64::Engine;
use bus::JobMessage;
use domain::provisioning::{CallbackKind, JobAction};
use domain::taskservs::{Params, TaskservName};
use serde::{Deserialize, Serialize};
use taskservs::{Catalog, ScriptFile, StepCallbacks, VmFacts};
use time::OffsetDateTime;

use crate::cloud_init::CallbackUrls;

/// The file of a job's working directory listing each step's callback URLs: read by the
/// simulated boot of `local` VMs, and by tests. Terraform loads only `*.tf` and
/// `*.tfvars.json`, so it is no variable file of theirs.
pub const CALLBACKS_FILE: &str = "taskserv_callbacks.json";

/// The driver cloud-init runs (`bash run.sh`) after every other command (the template
/// spells it out).
pub const RUN_SH: &str = "/var/lib/provisioning/taskservs/run.sh";

/// One step's name, params and callback URLs, as [`CALLBACKS_FILE`] holds them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepUrls {
    pub name: TaskservName,
    /// Its params (never secrets): the simulation reports a `port` among the outputs.
    #[serde(default)]
    pub params: Params,
    /// The output keys its definition declares: the simulation reports each.
    #[serde(default)]
    pub outputs: Vec<String>,
    pub started: String,
    pub installed: String,
    pub failed: String,
}

/// A file for cloud-init's `write_files`, its content gzipped then base64-encoded
/// (`encoding: gz+b64`): whatever a script holds, the YAML document stays valid, and the
/// user data stays small (AWS takes 16 KiB at most).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BootFile {
    /// A YAML double-quoted scalar.
    pub path: String,
    pub permissions: &'static str,
    pub content_gz_b64: String,
}

/// What the VM of a create job gets for its plan.
#[derive(Debug, Clone, Default)]
pub struct BootTaskservs {
    pub files: Vec<BootFile>,
    pub steps: Vec<StepUrls>,
}

/// Why a plan's scripts could not be made; the job fails with it. Never holds a URL.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("taskserv {taskserv}: {reason}")]
pub struct TaskservError {
    pub taskserv: TaskservName,
    pub reason: String,
}

/// The files and URLs of `job`'s plan; empty for a job that is not a create or whose VM
/// has no taskservs. The VM's address is not known before Terraform made it: templates get
/// an empty `vm.address` at create time (scripts find it on the VM).
pub fn compose(
    job: &JobMessage,
    catalog: Option<&Catalog>,
    callbacks: Option<&CallbackUrls>,
) -> Result<BootTaskservs, TaskservError> {
    let plan = &job.spec.taskservs;
    if job.action != JobAction::Create || plan.is_empty() {
        return Ok(BootTaskservs::default());
    }
    let Some(catalog) = catalog else {
        return Err(TaskservError {
            taskserv: plan[0].name.clone(),
            reason: "no taskserv catalog is loaded (PROVISIONING_TASKSERVS_DIR)".into(),
        });
    };
    let facts = VmFacts {
        name: job.spec.name.host_name().as_str().to_owned(),
        address: String::new(),
        user: job.spec.username.clone(),
        provider: job.spec.provider.as_str().to_owned(),
    };
    let now = OffsetDateTime::now_utc();
    let mut rendered = Vec::with_capacity(plan.len());
    let mut urls = Vec::with_capacity(plan.len());
    let mut steps = Vec::with_capacity(plan.len());
    for (i, step) in plan.iter().enumerate() {
        let error = |reason: String| TaskservError {
            taskserv: step.name.clone(),
            reason,
        };
        let index = u8::try_from(i).map_err(|_| error("a plan has at most 256 steps".into()))?;
        rendered.push(
            catalog
                .render(step, &facts, &BTreeMap::new())
                .map_err(|e| error(e.message))?,
        );
        let url = |kind| callbacks.map_or(String::new(), |c| c.url(job, kind, index, now));
        let step_urls = StepCallbacks {
            started: url(CallbackKind::TaskservStarted),
            installed: url(CallbackKind::TaskservInstalled),
            failed: url(CallbackKind::TaskservFailed),
        };
        steps.push(StepUrls {
            name: step.name.clone(),
            params: step.params.clone(),
            outputs: catalog
                .get(&step.name)
                .map(|def| def.outputs.keys().cloned().collect())
                .unwrap_or_default(),
            started: step_urls.started.clone(),
            installed: step_urls.installed.clone(),
            failed: step_urls.failed.clone(),
        });
        urls.push(step_urls);
    }
    let files = taskservs::driver(plan, &rendered, &urls)
        .into_iter()
        .map(boot_file)
        .collect();
    Ok(BootTaskservs { files, steps })
}

fn boot_file(file: ScriptFile) -> BootFile {
    BootFile {
        path: crate::cloud_init::quoted(&file.path),
        permissions: file.permissions,
        content_gz_b64: base64::engine::general_purpose::STANDARD.encode(gzip(&file.content)),
    }
}

fn gzip(text: &str) -> Vec<u8> {
    use std::io::Write;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    encoder
        .write_all(text.as_bytes())
        .expect("writing to memory does not fail");
    encoder.finish().expect("writing to memory does not fail")
}

/// The steps' URLs written by [`crate::prepare`] into `workdir`; `None` when it has none.
pub fn read_steps(workdir: &Path) -> Option<Vec<StepUrls>> {
    let text = std::fs::read(workdir.join(CALLBACKS_FILE)).ok()?;
    serde_json::from_slice(&text).ok()
}

#[cfg(test)]
#[path = "taskserv_boot_tests.rs"]
pub(crate) mod tests;
