//! Install jobs (taskservs on running VMs): `PROVISIONING_SSH_PORT`, the port the runner
//! reaches VMs' SSH at (22 by default). Their scripts come from the taskserv catalog
//! (`PROVISIONING_TASKSERVS_DIR`, loaded at start for every role).

use super::ConfigError;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstallConfig {
    pub ssh_port: u16,
}

impl Default for InstallConfig {
    fn default() -> Self {
        Self { ssh_port: 22 }
    }
}

pub fn install(var: &dyn Fn(&str) -> Option<String>) -> Result<InstallConfig, ConfigError> {
    Ok(InstallConfig {
        ssh_port: match var("PROVISIONING_SSH_PORT") {
            None => InstallConfig::default().ssh_port,
            Some(port) => port
                .parse::<u16>()
                .ok()
                .filter(|p| *p > 0)
                .ok_or(ConfigError {
                    name: "PROVISIONING_SSH_PORT",
                    reason: "must be a TCP port, 1 to 65535".into(),
                })?,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn install_jobs_reach_ssh_on_port_22_unless_told_another() {
        assert_eq!(install(&|_| None).unwrap(), InstallConfig::default());
        let set = install(&|name| (name == "PROVISIONING_SSH_PORT").then(|| "2222".into()));
        assert_eq!(set.unwrap().ssh_port, 2222);
        for bad in ["0", "65536", "ssh"] {
            let err = install(&|name| (name == "PROVISIONING_SSH_PORT").then(|| bad.to_owned()))
                .unwrap_err();
            assert_eq!(err.name, "PROVISIONING_SSH_PORT");
        }
    }
}
