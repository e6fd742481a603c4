//! What the VM and cluster create forms share: how the machines are reached (an SSH key
//! registered or pasted, the networks allowed with the caller's own address) and how long
//! they live, read from the form as the API reads its body; and the choices shown for them.

use app::Error;
use domain::provisioning::{DurationHours, SshPublicKey};

use super::form::Fields;
use crate::auth::Principal;
use crate::{ApiError, AppState};

/// The reach and duration fields as typed: empty at first, what was typed after a refusal.
#[derive(Default)]
pub(super) struct Reach {
    pub ssh_key_id: String,
    pub ssh_public_key: String,
    pub networks: String,
    pub me: bool,
    pub duration: String,
}

impl Reach {
    /// A new form's values: the caller's own address allowed, for four hours.
    pub fn new() -> Self {
        Reach {
            me: true,
            duration: "4".into(),
            ..Reach::default()
        }
    }

    pub fn of(fields: &Fields) -> Self {
        Reach {
            ssh_key_id: fields.get("ssh_key_id").to_owned(),
            ssh_public_key: fields.get("ssh_public_key").to_owned(),
            networks: fields.get("networks").to_owned(),
            me: fields.get("me") == "on",
            duration: fields.get("duration_hours").to_owned(),
        }
    }

    /// The key chosen: a registered one or a pasted one, not neither nor both.
    pub fn ssh_key(&self) -> Result<app::vms::SshKeyChoice, app::Error> {
        match (self.ssh_key_id.as_str(), self.ssh_public_key.as_str()) {
            ("", "") => Err(Error::invalid(
                "ssh_public_key",
                "choose a registered key or paste a public key",
            )),
            ("", key) => Ok(app::vms::SshKeyChoice::Key(SshPublicKey::parse(key)?)),
            (_, key) if !key.is_empty() => Err(Error::invalid(
                "ssh_public_key",
                "choose a registered key or paste one, not both",
            )),
            (id, _) => Ok(app::vms::SshKeyChoice::Registered(id.to_owned())),
        }
    }

    /// The networks typed (commas or spaces between them), and `me` when it is ticked.
    pub fn networks(&self) -> Result<Vec<String>, app::Error> {
        let mut allowed: Vec<String> = self
            .networks
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|n| !n.is_empty())
            .map(str::to_owned)
            .collect();
        if self.me {
            allowed.push("me".into());
        }
        if allowed.is_empty() {
            return Err(Error::invalid(
                "allow_ssh_from",
                "give at least one network, or allow your own address",
            ));
        }
        Ok(allowed)
    }

    pub fn duration(&self) -> Result<DurationHours, app::Error> {
        let hours = self
            .duration
            .parse::<i64>()
            .map_err(|_| Error::invalid("duration_hours", "give a whole number of hours"))?;
        Ok(DurationHours::parse(hours)?)
    }
}

/// The form field a reach refusal is shown beside (`ssh`, `networks` or `duration`), with
/// the request fields it stands for.
pub(super) fn fields_of(name: &str) -> Option<&'static [&'static str]> {
    match name {
        "ssh" => Some(&["ssh_key_id", "ssh_public_key"]),
        "networks" => Some(&["allow_ssh_from"]),
        "duration" => Some(&["duration_hours"]),
        _ => None,
    }
}

pub(super) struct KeyChoice {
    pub id: String,
    pub label: String,
}

/// What the reach fields offer: the caller's registered keys, their address as the platform
/// sees it (or why it cannot tell), and the most hours their policies allow.
pub(super) struct ReachChoices {
    pub keys: Vec<KeyChoice>,
    pub address: String,
}

pub(super) async fn choices(
    state: &AppState,
    principal: &Principal,
    caller: &app::Caller,
) -> Result<ReachChoices, ApiError> {
    let keys = state
        .app
        .ssh_keys(principal)
        .await?
        .into_iter()
        .map(|k| KeyChoice {
            id: k.id.to_string(),
            label: format!("{} ({})", k.name, k.fingerprint),
        })
        .collect();
    let address = match &caller.client_addr.0 {
        Ok(ip) => ip.to_string(),
        Err(why) => format!("unknown: {why}"),
    };
    Ok(ReachChoices { keys, address })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reach() -> Reach {
        Reach {
            ssh_public_key: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEpXvA+cP8hcraKOw+cO1rzIpAv7ms7vMYjhAKF7Qed/ me@laptop".into(),
            networks: "192.0.2.0/24, 198.51.100.0/24".into(),
            me: true,
            duration: "4".into(),
            ..Reach::default()
        }
    }

    fn field(result: Result<impl std::fmt::Debug, app::Error>) -> String {
        match result {
            Err(app::Error::Invalid { field, .. }) => field,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn networks_and_me_are_read_as_the_api_reads_them() {
        assert_eq!(
            reach().networks().unwrap(),
            ["192.0.2.0/24", "198.51.100.0/24", "me"]
        );
        assert_eq!(reach().duration().unwrap().get(), 4);
    }

    #[test]
    fn a_missing_or_doubled_value_names_its_field() {
        let no_key = Reach {
            ssh_public_key: String::new(),
            ..reach()
        };
        assert_eq!(field(no_key.ssh_key()), "ssh_public_key");
        let both = Reach {
            ssh_key_id: "0b6f1c7e-3a51-4f0e-9a43-4b1f2a8e5c11".into(),
            ..reach()
        };
        assert_eq!(field(both.ssh_key()), "ssh_public_key");
        let nowhere = Reach {
            networks: String::new(),
            me: false,
            ..reach()
        };
        assert_eq!(field(nowhere.networks()), "allow_ssh_from");
        for bad in ["0", "x", ""] {
            let wrong = Reach {
                duration: bad.into(),
                ..reach()
            };
            assert_eq!(field(wrong.duration()), "duration_hours", "{bad}");
        }
    }
}
