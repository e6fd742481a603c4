//! The simulated boot of `local` VMs. The `local` provider makes no machine, so nothing
//! runs cloud-init; to let a VM live its whole life in development (`provisioned`, then
//! `initializing`, then `running`), the local executor calls the VM's callback URLs the
//! way cloud-init would, once the VM's create job applied: `boot_started`, then
//! `phone_home` with the VM's host name, `delay` apart. It uses the URLs rendered for the
//! VM (its `terraform.tfvars.json`), so the callbacks go through the public API like a
//! real VM's, and are recorded with the VM as actor.
//!
//! A VM with taskservs then reports each step of its plan, in order, `delay` apart: started,
//! then installed with simulated outputs (`simulated=true`, `port` when the step has a
//! `port` param, and each output its definition declares, with a plain made-up value),
//! from the URLs of its working directory's `taskserv_callbacks.json`. Nothing is
//! installed: the `local` provider has no machine to install on.
//!
//! The simulation lives in the daemon that started the runner, in memory: if that daemon
//! stops before the create ends, the VM is left `provisioned` (and, past the boot timeout,
//! `unreachable`), as a real VM whose callbacks were lost would be.

use std::path::Path;
use std::time::Duration;

use domain::provisioning::{JobAction, JobId, ProviderId, Provisioning, VmId, VmStatus};
use store::PgPool;

use crate::taskserv_boot::StepUrls;
use crate::Launch;

/// The provider whose VMs have their boot simulated: the one that makes no machine.
const LOCAL_PROVIDER: &str = "local";

/// How long after its runner ended a create's success may take to be recorded (the
/// ingester's lag) before the simulation gives up.
const RECORDED_WITHIN: Duration = Duration::from_secs(60);
const POLL_EVERY: Duration = Duration::from_millis(250);

/// How often a callback is tried when the API cannot be reached, as cloud-init's
/// `phone_home` does (`tries: 5`).
const TRIES: u32 = 5;

/// Whether `local` VMs boot in simulation (`PROVISIONING_LOCAL_BOOT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LocalBoot {
    /// Their callbacks come only from whoever calls them (tests do, by hand).
    Off,
    /// `boot_started` `delay` after the create applied, `phone_home` `delay` later.
    Simulate { delay: Duration },
}

impl LocalBoot {
    pub const DEFAULT_DELAY: Duration = Duration::from_secs(2);
}

impl Default for LocalBoot {
    fn default() -> Self {
        LocalBoot::Simulate {
            delay: Self::DEFAULT_DELAY,
        }
    }
}

/// Runs simulated boots for the local executor.
pub struct BootSimulator {
    pool: PgPool,
    delay: Duration,
    client: reqwest::Client,
}

/// What the VM of one create job would call.
pub(crate) struct BootPlan {
    vm_id: VmId,
    job_id: JobId,
    boot_started: String,
    phone_home: String,
    host_name: String,
    /// The plan's steps, in order; empty without taskservs.
    taskservs: Vec<StepUrls>,
}

impl BootSimulator {
    /// A simulator when `setting` asks for one; it reads the VMs' state from `pool`.
    pub fn new(setting: LocalBoot, pool: PgPool) -> Option<Self> {
        let LocalBoot::Simulate { delay } = setting else {
            return None;
        };
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .build()
            .inspect_err(|e| tracing::warn!(error = %e, "no HTTP client: no simulated boot"))
            .ok()?;
        Some(Self {
            pool,
            delay,
            client,
        })
    }

    /// The plan for the job of `launch`: a create job of the `local` provider whose VM was
    /// given callback URLs; `None` for any other.
    pub(crate) fn plan(&self, launch: &Launch) -> Option<BootPlan> {
        if !boots(launch.action, &launch.provider) {
            return None;
        }
        let (boot_started, phone_home, host_name) = rendered(&launch.workdir)?;
        Some(BootPlan {
            vm_id: launch.vm_id,
            job_id: launch.job_id,
            boot_started,
            phone_home,
            host_name,
            taskservs: crate::taskserv_boot::read_steps(&launch.workdir).unwrap_or_default(),
        })
    }

    /// Once the runner of the plan's job ended: waits for the create's success to be
    /// recorded, then boots. Nothing happens for a create that failed or was cancelled.
    #[tracing::instrument(skip_all, fields(vm_id = %plan.vm_id, job_id = %plan.job_id))]
    pub(crate) async fn run(&self, plan: BootPlan) {
        if !self.applied(plan.vm_id, plan.job_id).await {
            return;
        }
        tokio::time::sleep(self.delay).await;
        if !self.call(&plan.boot_started, "boot_started", &[]).await {
            return;
        }
        tokio::time::sleep(self.delay).await;
        let instance_id = plan.vm_id.to_string();
        let form = [
            ("instance_id", instance_id.as_str()),
            ("hostname", plan.host_name.as_str()),
            ("fqdn", plan.host_name.as_str()),
        ];
        if !self.call(&plan.phone_home, "phone_home", &form).await {
            return;
        }
        for step in &plan.taskservs {
            tokio::time::sleep(self.delay).await;
            if !self.call(&step.started, "taskserv_started", &[]).await {
                return;
            }
            tokio::time::sleep(self.delay).await;
            let outputs = simulated_outputs(step, &plan.host_name);
            let form = [("outputs", outputs.as_str())];
            if !self
                .call(&step.installed, "taskserv_installed", &form)
                .await
            {
                return;
            }
        }
    }

    /// Whether the VM's create job `job_id` succeeded: `false` once it ended otherwise, or
    /// when its end is not recorded in time.
    async fn applied(&self, vm_id: VmId, job_id: JobId) -> bool {
        let deadline = tokio::time::Instant::now() + RECORDED_WITHIN;
        while tokio::time::Instant::now() < deadline {
            match store::load::<Provisioning>(&self.pool, &vm_id.to_string()).await {
                Ok((vm, _)) => {
                    let life = vm.lifecycle();
                    let booting = life.boot.as_ref().is_some_and(|b| b.job == job_id);
                    if booting && life.status == VmStatus::Provisioned {
                        return true;
                    }
                    if life.active_job.as_ref().map(|j| j.id) != Some(job_id) {
                        tracing::info!(
                            status = life.status.as_str(),
                            "the create did not leave a VM to boot; no simulated boot"
                        );
                        return false;
                    }
                }
                Err(e) => tracing::warn!(error = %e, "could not read the VM"),
            }
            tokio::time::sleep(POLL_EVERY).await;
        }
        tracing::warn!("the create's result was not recorded in time; no simulated boot");
        false
    }

    /// Posts one callback (a form, as cloud-init does); whether it was recorded. The URL
    /// holds the callback's token: it is never logged.
    async fn call(&self, url: &str, kind: &str, form: &[(&str, &str)]) -> bool {
        for attempt in 1..=TRIES {
            match self.client.post(url).form(form).send().await {
                Ok(response) if response.status().is_success() => {
                    tracing::info!(callback = kind, "simulated boot: called back");
                    return true;
                }
                // Refused for good: used, expired, or the VM no longer stands.
                Ok(response) if response.status().is_client_error() => {
                    tracing::info!(callback = kind, status = %response.status(), "simulated boot: callback refused");
                    return false;
                }
                Ok(response) => {
                    tracing::warn!(callback = kind, attempt, status = %response.status(), "simulated boot: callback failed")
                }
                Err(e) => {
                    tracing::warn!(callback = kind, attempt, error = %e.without_url(), "simulated boot: callback failed")
                }
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        false
    }
}

/// Whether a job's VM boots in simulation: the VM a `local` create makes, and no other.
fn boots(action: JobAction, provider: &ProviderId) -> bool {
    action == JobAction::Create && provider.as_str() == LOCAL_PROVIDER
}

/// The callback URLs and host name rendered for the VM into `workdir`'s variables; `None`
/// when it has no callbacks.
fn rendered(workdir: &Path) -> Option<(String, String, String)> {
    let vars = std::fs::read(workdir.join("terraform.tfvars.json")).ok()?;
    let vars: serde_json::Value = serde_json::from_slice(&vars).ok()?;
    let text = |name: &str| {
        vars[name]
            .as_str()
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    Some((
        text("boot_callback_url")?,
        text("phone_home_url")?,
        text("vm_name")?,
    ))
}

/// What a simulated taskserv reports as installed: `key=value` lines saying it is
/// simulated, with its `port` param when it has one, then each output its definition
/// declares: a URL (`url` or a key ending in `_url`) is `https://<host>:<port param, or
/// 443>`, any other `simulated-<key>`. `host` is the VM's host name: the simulation knows
/// no address.
fn simulated_outputs(step: &StepUrls, host: &str) -> String {
    let port = step
        .params
        .get("port")
        .filter(|p| !p.is_null())
        .map(|port| {
            port.as_str()
                .map_or_else(|| port.to_string(), str::to_owned)
        });
    let mut lines = String::from("simulated=true\n");
    if let Some(port) = &port {
        lines.push_str(&format!("port={port}\n"));
    }
    for key in &step.outputs {
        if key == "simulated" || (key == "port" && port.is_some()) {
            continue;
        }
        let value = if key == "url" || key.ends_with("_url") {
            format!("https://{host}:{}", port.as_deref().unwrap_or("443"))
        } else {
            format!("simulated-{key}")
        };
        lines.push_str(&format!("{key}={value}\n"));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_vms_of_local_creates_boot_in_simulation() {
        let local = ProviderId::parse("local").unwrap();
        assert!(boots(JobAction::Create, &local));
        assert!(!boots(JobAction::Destroy, &local));
        assert!(!boots(JobAction::Refresh, &local));
        assert!(!boots(
            JobAction::Create,
            &ProviderId::parse("nrec").unwrap()
        ));
    }

    #[test]
    fn the_simulation_calls_the_urls_rendered_for_the_vm() {
        let dir = tempfile::tempdir().unwrap();
        let vars = |boot: &str| {
            serde_json::json!({
                "vm_name": "my-vm-1",
                "boot_callback_url": boot,
                "phone_home_url": "http://127.0.0.1:8080/api/v1/callbacks/b",
            })
        };
        let file = dir.path().join("terraform.tfvars.json");
        std::fs::write(
            &file,
            vars("http://127.0.0.1:8080/api/v1/callbacks/a").to_string(),
        )
        .unwrap();
        let (boot, phone_home, host) = rendered(dir.path()).unwrap();
        assert!(boot.ends_with("/a") && phone_home.ends_with("/b"));
        assert_eq!(host, "my-vm-1");
        // A VM given no callbacks has nothing to call.
        std::fs::write(&file, vars("").to_string()).unwrap();
        assert!(rendered(dir.path()).is_none());
    }

    fn step(params: serde_json::Value, outputs: &[&str]) -> StepUrls {
        StepUrls {
            name: domain::taskservs::TaskservName::parse("grafana").unwrap(),
            params: serde_json::from_value(params).unwrap(),
            outputs: outputs.iter().map(|k| k.to_string()).collect(),
            started: String::new(),
            installed: String::new(),
            failed: String::new(),
        }
    }

    #[test]
    fn a_simulated_taskserv_reports_its_port_param_among_its_outputs() {
        assert_eq!(
            simulated_outputs(
                &step(serde_json::json!({"port": 3000, "x": "y"}), &[]),
                "vm"
            ),
            "simulated=true\nport=3000\n"
        );
        assert_eq!(
            simulated_outputs(&step(serde_json::json!({}), &[]), "vm"),
            "simulated=true\n"
        );
    }

    #[test]
    fn a_simulated_taskserv_reports_every_declared_output_with_a_made_up_value() {
        let grafana = step(
            serde_json::json!({"port": 3000}),
            &["admin_password_file", "admin_user", "url"],
        );
        assert_eq!(
            simulated_outputs(&grafana, "dash-1"),
            "simulated=true\nport=3000\nadmin_password_file=simulated-admin_password_file\n\
             admin_user=simulated-admin_user\nurl=https://dash-1:3000\n"
        );
        // Without a port param a URL is on 443, and a declared `port` is made up too.
        let k3s = step(
            serde_json::json!({"role": "server"}),
            &["kubeconfig", "port", "server_url"],
        );
        assert_eq!(
            simulated_outputs(&k3s, "k-1"),
            "simulated=true\nkubeconfig=simulated-kubeconfig\nport=simulated-port\n\
             server_url=https://k-1:443\n"
        );
    }
}
