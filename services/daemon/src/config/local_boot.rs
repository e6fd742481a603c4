//! The simulated boot of `local` VMs: `PROVISIONING_LOCAL_BOOT` (`simulate`, the default,
//! or `off`) and `PROVISIONING_LOCAL_BOOT_DELAY_SECS` (2 by default: from the create's
//! success to `boot_started`, and from there to `phone_home`).

use std::time::Duration;

use dispatcher::LocalBoot;

use super::ConfigError;

/// The longest delay accepted: past the boot timeout's order of magnitude, a typo.
const MAX_DELAY_SECS: u64 = 3600;

pub fn local_boot(var: &dyn Fn(&str) -> Option<String>) -> Result<LocalBoot, ConfigError> {
    let simulate = match var("PROVISIONING_LOCAL_BOOT").as_deref() {
        None | Some("simulate") => true,
        Some("off") => false,
        Some(_) => {
            return Err(ConfigError {
                name: "PROVISIONING_LOCAL_BOOT",
                reason: "must be `simulate` or `off`".into(),
            })
        }
    };
    let delay = match var("PROVISIONING_LOCAL_BOOT_DELAY_SECS") {
        None => LocalBoot::DEFAULT_DELAY,
        Some(v) => v
            .parse::<u64>()
            .ok()
            .filter(|secs| *secs <= MAX_DELAY_SECS)
            .map(Duration::from_secs)
            .ok_or(ConfigError {
                name: "PROVISIONING_LOCAL_BOOT_DELAY_SECS",
                reason: format!("must be a number of seconds from 0 to {MAX_DELAY_SECS}"),
            })?,
    };
    Ok(match simulate {
        true => LocalBoot::Simulate { delay },
        false => LocalBoot::Off,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(vars: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn local_vms_boot_in_simulation_unless_it_is_off() {
        let two = LocalBoot::Simulate {
            delay: Duration::from_secs(2),
        };
        assert_eq!(local_boot(&with(&[])).unwrap(), two);
        assert_eq!(
            local_boot(&with(&[("PROVISIONING_LOCAL_BOOT", "simulate")])).unwrap(),
            two
        );
        assert_eq!(
            local_boot(&with(&[("PROVISIONING_LOCAL_BOOT", "off")])).unwrap(),
            LocalBoot::Off
        );
        assert_eq!(
            local_boot(&with(&[("PROVISIONING_LOCAL_BOOT_DELAY_SECS", "0")])).unwrap(),
            LocalBoot::Simulate {
                delay: Duration::ZERO
            }
        );
    }

    #[test]
    fn a_wrong_local_boot_setting_is_refused_with_its_name() {
        for (vars, name) in [
            (
                &[("PROVISIONING_LOCAL_BOOT", "on")][..],
                "PROVISIONING_LOCAL_BOOT",
            ),
            (
                &[("PROVISIONING_LOCAL_BOOT_DELAY_SECS", "2s")][..],
                "PROVISIONING_LOCAL_BOOT_DELAY_SECS",
            ),
            (
                &[("PROVISIONING_LOCAL_BOOT_DELAY_SECS", "86400")][..],
                "PROVISIONING_LOCAL_BOOT_DELAY_SECS",
            ),
        ] {
            let vars: &'static [(&str, &str)] = vars;
            assert_eq!(local_boot(&with(vars)).unwrap_err().name, name);
        }
    }
}
