//! Identifiers and user input as newtypes, parsed once at the boundary.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// A value that failed to parse, naming the input field it came from.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct ValueError {
    pub field: &'static str,
    pub reason: String,
}

impl ValueError {
    fn new(field: &'static str, reason: impl Into<String>) -> Self {
        Self {
            field,
            reason: reason.into(),
        }
    }
}

/// The id of a VM, which is also the id of its `Provisioning` aggregate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct VmId(Uuid);

impl VmId {
    pub fn new() -> Self {
        Self(Uuid::new_v4())
    }

    pub fn as_uuid(&self) -> Uuid {
        self.0
    }
}

impl Default for VmId {
    fn default() -> Self {
        Self::new()
    }
}

impl From<Uuid> for VmId {
    fn from(id: Uuid) -> Self {
        Self(id)
    }
}

impl FromStr for VmId {
    type Err = ValueError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Uuid::parse_str(s)
            .map(Self)
            .map_err(|_| ValueError::new("id", "must be a UUID"))
    }
}

impl fmt::Display for VmId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// The number of a Terraform job within its VM: 1 for the first apply, then 2, 3, ...
/// Deterministic, so a redelivered message names the same job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct JobId(u32);

impl JobId {
    pub const FIRST: JobId = JobId(1);

    pub fn new(n: u32) -> Self {
        Self(n)
    }

    pub fn get(&self) -> u32 {
        self.0
    }

    pub fn next(&self) -> Self {
        Self(self.0 + 1)
    }
}

impl fmt::Display for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A VM name: 1 to 63 characters of `[a-z0-9-]`, starting with a letter, so it is a valid
/// host name and resource name on every cloud.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct VmName(String);

impl VmName {
    pub fn parse(s: &str) -> Result<Self, ValueError> {
        let err = |reason| Err(ValueError::new("name", reason));
        if s.is_empty() || s.len() > 63 {
            return err("must be 1 to 63 characters long");
        }
        if !s.starts_with(|c: char| c.is_ascii_lowercase()) {
            return err("must start with a lowercase letter");
        }
        if !s
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        {
            return err("may contain only lowercase letters, digits and '-'");
        }
        Ok(Self(s.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Parses a catalog identifier: 1 to 64 characters of `[a-z0-9._-]`.
fn catalog_id(field: &'static str, s: &str) -> Result<String, ValueError> {
    let valid = !s.is_empty()
        && s.len() <= 64
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "._-".contains(c));
    if valid {
        Ok(s.to_owned())
    } else {
        Err(ValueError::new(
            field,
            "must be 1 to 64 characters of [a-z0-9._-]",
        ))
    }
}

/// The id of a provider in the catalog, e.g. `local` or `nrec`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ProviderId(String);

impl ProviderId {
    pub fn parse(s: &str) -> Result<Self, ValueError> {
        catalog_id("provider", s).map(Self)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The id of a template within its provider, e.g. `small`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct TemplateId(String);

impl TemplateId {
    pub fn parse(s: &str) -> Result<Self, ValueError> {
        catalog_id("template", s).map(Self)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// An OpenSSH public key (`ssh-ed25519 AAAA... comment`), checked to decode.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SshPublicKey(String);

impl SshPublicKey {
    pub fn parse(s: &str) -> Result<Self, ValueError> {
        let s = s.trim();
        // One line of printable text: the key ends up in cloud-init YAML and on VMs.
        if s.chars().any(char::is_control) {
            return Err(ValueError::new(
                "ssh_public_key",
                "must be one line without control characters",
            ));
        }
        let key = ssh_key::PublicKey::from_openssh(s)
            .map_err(|_| ValueError::new("ssh_public_key", "is not an OpenSSH public key"))?;
        let normalized = key
            .to_openssh()
            .map_err(|_| ValueError::new("ssh_public_key", "is not an OpenSSH public key"))?;
        Ok(Self(normalized))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// An IPv4 network in CIDR notation, allowed to reach the VM over SSH.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Cidr(ipnet::Ipv4Net);

impl Cidr {
    pub fn parse(s: &str) -> Result<Self, ValueError> {
        s.trim().parse::<ipnet::Ipv4Net>().map(Self).map_err(|_| {
            ValueError::new(
                "allow_ssh_from",
                format!("{s:?} is not an IPv4 CIDR such as 192.0.2.0/24"),
            )
        })
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// How long the VM may live, 1 to 168 hours (a week).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct DurationHours(u16);

impl DurationHours {
    pub fn parse(hours: i64) -> Result<Self, ValueError> {
        match u16::try_from(hours) {
            Ok(h @ 1..=168) => Ok(Self(h)),
            _ => Err(ValueError::new(
                "duration_hours",
                "must be between 1 and 168 hours",
            )),
        }
    }

    pub fn get(&self) -> u16 {
        self.0
    }
}

/// Everything a job needs to know about the VM it builds. Taken once, at request time, so
/// every later job of the VM (destroy included) uses the same values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VmSpec {
    pub name: VmName,
    pub provider: ProviderId,
    pub template: TemplateId,
    pub image_name: String,
    pub flavor_name: String,
    pub ssh_public_key: SshPublicKey,
    pub allow_ssh_from: Vec<Cidr>,
    pub duration_hours: DurationHours,
    /// The login user on the VM, from the template.
    #[serde(default = "default_username")]
    pub username: String,
}

fn default_username() -> String {
    "ubuntu".to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vm_names_follow_host_name_rules() {
        assert!(VmName::parse("web-1").is_ok());
        assert!(VmName::parse(&"a".repeat(63)).is_ok());
        for bad in ["", "1web", "-web", "Web", "web_1", "wéb", &"a".repeat(64)] {
            let err = VmName::parse(bad).unwrap_err();
            assert_eq!(err.field, "name", "{bad:?}");
        }
    }

    #[test]
    fn ssh_keys_must_decode_as_openssh() {
        let key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEpXvA+cP8hcraKOw+cO1rzIpAv7ms7vMYjhAKF7Qed/ test@example";
        assert!(SshPublicKey::parse(key).is_ok());
        assert!(SshPublicKey::parse("ssh-ed25519 notbase64").is_err());
        assert!(SshPublicKey::parse("hello").is_err());
        let injected = format!("{}\nruncmd: [reboot]", key);
        assert!(SshPublicKey::parse(&injected).is_err());
    }

    #[test]
    fn cidrs_must_be_ipv4_networks() {
        assert_eq!(
            Cidr::parse("192.0.2.0/24").unwrap().to_string(),
            "192.0.2.0/24"
        );
        assert!(Cidr::parse("192.0.2.1").is_err());
        assert!(Cidr::parse("2001:db8::/32").is_err());
        assert!(Cidr::parse("300.0.0.0/8").is_err());
    }

    #[test]
    fn durations_are_one_hour_to_one_week() {
        assert!(DurationHours::parse(1).is_ok());
        assert!(DurationHours::parse(168).is_ok());
        assert!(DurationHours::parse(0).is_err());
        assert!(DurationHours::parse(169).is_err());
        assert!(DurationHours::parse(-5).is_err());
    }
}
