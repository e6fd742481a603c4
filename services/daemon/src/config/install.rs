//! Install jobs (taskservs on running VMs): `PROVISIONING_TASKSERVS_DIR`, the taskserv
//! catalog (`hcl/taskservs` by default), and `PROVISIONING_SSH_PORT`, the port the runner
//! reaches VMs' SSH at (22 by default).

use std::path::PathBuf;

use super::ConfigError;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstallConfig {
    /// The taskserv catalog: `registry.toml` and a folder per taskserv. A folder that does
    /// not exist leaves install jobs failing with that reason.
    pub taskservs_dir: PathBuf,
    pub ssh_port: u16,
}

impl Default for InstallConfig {
    fn default() -> Self {
        Self {
            taskservs_dir: "hcl/taskservs".into(),
            ssh_port: 22,
        }
    }
}

pub fn install(var: &dyn Fn(&str) -> Option<String>) -> Result<InstallConfig, ConfigError> {
    let default = InstallConfig::default();
    Ok(InstallConfig {
        taskservs_dir: var("PROVISIONING_TASKSERVS_DIR")
            .map(PathBuf::from)
            .unwrap_or(default.taskservs_dir),
        ssh_port: match var("PROVISIONING_SSH_PORT") {
            None => default.ssh_port,
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
    fn install_settings_default_to_the_shipped_catalog_and_port_22() {
        assert_eq!(install(&|_| None).unwrap(), InstallConfig::default());
        let set = install(&|name| match name {
            "PROVISIONING_SSH_PORT" => Some("2222".into()),
            "PROVISIONING_TASKSERVS_DIR" => Some("/etc/provisioning/taskservs".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!(set.ssh_port, 2222);
        assert_eq!(
            set.taskservs_dir,
            PathBuf::from("/etc/provisioning/taskservs")
        );
        for bad in ["0", "65536", "ssh"] {
            let err = install(&|name| (name == "PROVISIONING_SSH_PORT").then(|| bad.to_owned()))
                .unwrap_err();
            assert_eq!(err.name, "PROVISIONING_SSH_PORT");
        }
    }
}
