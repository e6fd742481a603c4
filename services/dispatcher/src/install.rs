//! The install directory of an install job: instead of Terraform files, each step's
//! rendered scripts, the plan the runner follows (`plan.json`) and the VM's pinned SSH host
//! keys (`known_hosts`). The VM's address and host keys come from its events; a VM that
//! posted no host key when it phoned home gets no install: its key is never learnt on
//! first use.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use bus::JobMessage;
use domain::provisioning::Lifecycle;
use domain::taskservs::{PlannedTaskserv, TaskservName, TaskservState};
use runner::install::plan::{self, InstallPlan, InstallStep, Target};

use crate::deploy_key::DeployKey;
use crate::DispatcherConfig;

/// What a script may know of the VM it runs on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VmFacts {
    pub name: String,
    pub address: String,
    pub user: String,
    pub provider: String,
}

/// A step's scripts, rendered for one VM.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepScripts {
    pub install: String,
    pub health: String,
    /// How long its health check may keep failing after install.
    pub health_timeout_secs: u32,
}

/// The outputs of the taskservs installed on the VM so far, by name: what a step's
/// templates may use of its dependencies.
pub type DepOutputs = BTreeMap<TaskservName, BTreeMap<String, String>>;

/// Renders a step's scripts: the deployment's taskserv catalog (crate `taskservs`) behind
/// a narrow trait, so the dispatcher needs nothing else of it.
pub trait InstallScripts: Send + Sync {
    fn render(
        &self,
        step: &PlannedTaskserv,
        vm: &VmFacts,
        deps: &DepOutputs,
    ) -> Result<StepScripts, String>;
}

/// Why a VM without a pinned host key gets no install.
pub const NO_HOST_KEY: &str = "the VM posted no SSH host key when it phoned home: install jobs \
     trust only pinned keys";

/// Makes `<work_dir>/<vm_id>/job-<n>/` afresh for install job `job` of the VM whose state
/// is `vm`, and returns it with the VM's deploy key (for the runner's environment alone).
/// The error is the job's failure reason.
pub fn prepare(
    config: &DispatcherConfig,
    job: &JobMessage,
    vm: &Lifecycle,
) -> Result<(PathBuf, DeployKey), String> {
    let callbacks = config.callbacks.as_ref().ok_or(
        "install jobs need the deployment's callback key, from which the VM's deploy key is \
         derived: none is configured",
    )?;
    let scripts = config
        .install_scripts
        .as_ref()
        .ok_or("no taskserv catalog is loaded (PROVISIONING_TASKSERVS_DIR)")?;
    let host_keys = vm
        .boot
        .as_ref()
        .map(|b| b.host_keys.clone())
        .unwrap_or_default();
    let target = Target {
        address: vm
            .ip
            .clone()
            .filter(|ip| !ip.is_empty())
            .ok_or("the VM has no address to reach it at")?,
        port: config.ssh_port,
        user: job.spec.username.clone(),
    };
    let known_hosts = known_hosts(&target, &host_keys)?;
    let facts = VmFacts {
        name: job.spec.name.host_name().as_str().to_owned(),
        address: target.address.clone(),
        user: target.user.clone(),
        provider: job.spec.provider.as_str().to_owned(),
    };
    let deps: DepOutputs = vm
        .taskservs
        .iter()
        .filter_map(|e| match &e.state {
            TaskservState::Installed { outputs } => Some((e.step.name.clone(), outputs.clone())),
            _ => None,
        })
        .collect();
    let mut steps = vec![];
    let mut files = vec![(plan::KNOWN_HOSTS_FILE.to_owned(), known_hosts)];
    // The job's own steps, as its `TaskservsRequested` recorded them: the VM's spec holds
    // its create's plan.
    let planned: Vec<PlannedTaskserv> = vm.steps_of(job.job_id).map(|e| e.step.clone()).collect();
    if planned.is_empty() {
        return Err(format!("job {} has no taskserv to install", job.job_id));
    }
    for (index, step) in planned.iter().enumerate() {
        let rendered = scripts
            .render(step, &facts, &deps)
            .map_err(|e| format!("could not render taskserv {}: {e}", step.name))?;
        files.push((plan::install_file(index), rendered.install));
        files.push((plan::health_file(index), rendered.health));
        steps.push(InstallStep {
            name: step.name.clone(),
            version: step.version.clone(),
            on_error: step.on_error,
            max_retries: step.max_retries,
            health_timeout_secs: rendered.health_timeout_secs,
        });
    }
    let plan = InstallPlan { target, steps };
    let plan = serde_json::to_string_pretty(&plan).map_err(|e| e.to_string())?;
    files.push((plan::PLAN_FILE.to_owned(), plan));
    let dir = config
        .work_dir
        .join(job.vm_id.to_string())
        .join(format!("job-{}", job.job_id));
    write(&dir, &files).map_err(|e| {
        format!(
            "could not prepare the install directory {}: {e}",
            dir.display()
        )
    })?;
    Ok((dir, DeployKey::derive(&callbacks.signer, job.vm_id)))
}

/// `known_hosts` pinning the VM's host keys for `target`; an error when it posted none
/// that parses.
fn known_hosts(target: &Target, host_keys: &[String]) -> Result<String, String> {
    let pattern = target.host_pattern();
    let lines: Vec<String> = host_keys
        .iter()
        .filter_map(|k| ssh_key::PublicKey::from_openssh(k.trim()).ok())
        .filter_map(|k| {
            let mut key = k.clone();
            key.set_comment("");
            key.to_openssh().ok()
        })
        .map(|k| format!("{pattern} {}\n", k.trim()))
        .collect();
    match lines.is_empty() {
        true => Err(NO_HOST_KEY.to_owned()),
        false => Ok(lines.concat()),
    }
}

fn write(dir: &Path, files: &[(String, String)]) -> std::io::Result<()> {
    if dir.exists() {
        std::fs::remove_dir_all(dir)?;
    }
    std::fs::create_dir_all(dir)?;
    for (name, text) in files {
        std::fs::write(dir.join(name), text)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(port: u16) -> Target {
        Target {
            address: "192.0.2.7".into(),
            port,
            user: "ubuntu".into(),
        }
    }

    const HOST_KEY: &str =
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEpXvA+cP8hcraKOw+cO1rzIpAv7ms7vMYjhAKF7Qed/ root@web-1";

    #[test]
    fn known_hosts_pins_the_posted_keys_for_the_address_and_port() {
        let lines = known_hosts(&target(22), &[HOST_KEY.into(), "garbage".into()]).unwrap();
        assert_eq!(
            lines,
            "192.0.2.7 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEpXvA+cP8hcraKOw+cO1rzIpAv7ms7vMYjhAKF7Qed/\n"
        );
        let lines = known_hosts(&target(2222), &[HOST_KEY.into()]).unwrap();
        assert!(
            lines.starts_with("[192.0.2.7]:2222 ssh-ed25519 "),
            "{lines}"
        );
    }

    /// Scripts that say which step they are, nothing else.
    struct Echo;

    impl InstallScripts for Echo {
        fn render(
            &self,
            step: &PlannedTaskserv,
            _: &VmFacts,
            _: &DepOutputs,
        ) -> Result<StepScripts, String> {
            Ok(StepScripts {
                install: format!("echo install {}\n", step.name),
                health: format!("echo health {}\n", step.name),
                health_timeout_secs: 60,
            })
        }
    }

    #[tokio::test]
    async fn an_install_directory_holds_no_key_and_becomes_a_config_map_as_it_is() {
        let work = tempfile::tempdir().unwrap();
        let mut config = crate::workdir::tests::config(work.path());
        config.install_scripts = Some(std::sync::Arc::new(Echo));
        let mut job = crate::workdir::tests::job("local");
        job.action = domain::provisioning::JobAction::Install;
        job.job_id = domain::provisioning::JobId::new(2);
        let mut boot = domain::provisioning::Boot::new(domain::provisioning::JobId::FIRST);
        boot.host_keys = vec![HOST_KEY.into()];
        let step = PlannedTaskserv {
            name: TaskservName::parse("redis").unwrap(),
            version: "1.0.0".into(),
            params: Default::default(),
            on_error: Default::default(),
            max_retries: 0,
            requested: true,
        };
        let vm = Lifecycle {
            ip: Some("192.0.2.7".into()),
            boot: Some(boot),
            taskservs: vec![domain::provisioning::TaskservEntry {
                step,
                job: job.job_id,
                state: TaskservState::Pending,
            }],
            ..Default::default()
        };
        let (dir, key) = prepare(&config, &job, &vm).unwrap();
        // What the Kubernetes executor puts in the job's ConfigMap: every file, and no key.
        let files = crate::kubernetes::manifest::read_workdir(&dir)
            .await
            .unwrap();
        let names: Vec<&str> = files.keys().map(String::as_str).collect();
        assert_eq!(
            names,
            [
                "known_hosts",
                "plan.json",
                "step-0-health.sh",
                "step-0-install.sh"
            ]
        );
        let key_lines: Vec<&str> = key
            .private_pem()
            .lines()
            .filter(|l| !l.starts_with("-----"))
            .collect();
        for (name, bytes) in &files {
            let text = String::from_utf8_lossy(bytes);
            assert!(!text.contains("PRIVATE KEY"), "{name}: {text}");
            for line in &key_lines {
                assert!(!text.contains(line), "{name} holds the deploy key");
            }
        }
    }

    #[test]
    fn a_vm_that_posted_no_host_key_gets_no_install() {
        assert_eq!(known_hosts(&target(22), &[]).unwrap_err(), NO_HOST_KEY);
        assert_eq!(
            known_hosts(&target(22), &["not a key".into()]).unwrap_err(),
            NO_HOST_KEY
        );
    }
}
