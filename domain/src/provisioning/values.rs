//! Identifiers and user input as newtypes, parsed once at the boundary.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::names::VmName;
use crate::identity::UserId;

/// A value that failed to parse, naming the input field it came from.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct ValueError {
    pub field: &'static str,
    pub reason: String,
}

impl ValueError {
    pub(super) fn new(field: &'static str, reason: impl Into<String>) -> Self {
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

/// The name a user gives a registered SSH key: 1 to 64 characters on one line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SshKeyName(String);

impl SshKeyName {
    pub fn parse(s: &str) -> Result<Self, ValueError> {
        let s = s.trim();
        if s.is_empty() || s.chars().count() > 64 {
            return Err(ValueError::new("name", "must be 1 to 64 characters long"));
        }
        if s.chars().any(char::is_control) {
            return Err(ValueError::new(
                "name",
                "must be one line without control characters",
            ));
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

/// An OpenSSH public key (`ssh-ed25519 AAAA... comment`) of a kind VMs accept: ed25519,
/// ECDSA on NIST P-256, P-384 or P-521, or RSA of at least [`MIN_RSA_BITS`] bits. Keys
/// older servers still take (DSA, short RSA) are refused here, once, for every way a key
/// comes in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SshPublicKey(String);

/// The shortest RSA key accepted: what NIST recommends past 2030 (SP 800-57).
pub const MIN_RSA_BITS: usize = 3072;

/// The longest key line accepted, in bytes: OpenSSH's own limit on a key's blob. A 16384-bit
/// RSA key with a long comment fits; the key travels in every job message of its VM.
pub const MAX_SSH_KEY_LEN: usize = 16 * 1024;

impl SshPublicKey {
    /// A key sent as `ssh_public_key`.
    pub fn parse(s: &str) -> Result<Self, ValueError> {
        Self::parse_field("ssh_public_key", s)
    }

    /// A key sent in the input field `field`; errors name it.
    pub fn parse_field(field: &'static str, s: &str) -> Result<Self, ValueError> {
        let s = s.trim();
        if s.len() > MAX_SSH_KEY_LEN {
            return Err(ValueError::new(
                field,
                format!("must be at most {MAX_SSH_KEY_LEN} bytes long"),
            ));
        }
        // One line of printable text: the key ends up in cloud-init YAML and on VMs.
        if s.chars().any(char::is_control) {
            return Err(ValueError::new(
                field,
                "must be one line without control characters",
            ));
        }
        let key = ssh_key::PublicKey::from_openssh(s)
            .map_err(|_| ValueError::new(field, "is not an OpenSSH public key"))?;
        accepted_kind(key.key_data()).map_err(|reason| ValueError::new(field, reason))?;
        let normalized = key
            .to_openssh()
            .map_err(|_| ValueError::new(field, "is not an OpenSSH public key"))?;
        Ok(Self(normalized))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The SHA-256 fingerprint as `ssh-keygen -l` prints it: `SHA256:` and the unpadded
    /// base64 of the digest of the key's blob.
    pub fn fingerprint(&self) -> String {
        self.key().fingerprint(ssh_key::HashAlg::Sha256).to_string()
    }

    /// The key's type as OpenSSH names it, e.g. `ssh-ed25519` or `ecdsa-sha2-nistp256`.
    pub fn algorithm(&self) -> String {
        self.key().algorithm().as_str().to_owned()
    }

    fn key(&self) -> ssh_key::PublicKey {
        ssh_key::PublicKey::from_openssh(&self.0).expect("parsed once, when it was made")
    }
}

/// Whether VMs take keys of this kind; the reason if not.
fn accepted_kind(key: &ssh_key::public::KeyData) -> Result<(), String> {
    use ssh_key::public::KeyData;
    use ssh_key::{Algorithm, EcdsaCurve};
    match key {
        KeyData::Ed25519(_) => Ok(()),
        KeyData::Ecdsa(ecdsa) => match ecdsa.curve() {
            EcdsaCurve::NistP256 | EcdsaCurve::NistP384 | EcdsaCurve::NistP521 => Ok(()),
        },
        KeyData::Rsa(rsa) => {
            let bits = rsa.n.as_positive_bytes().map_or(0, |n| {
                n.len() * 8 - n.first().map_or(0, |b| b.leading_zeros() as usize)
            });
            match bits >= MIN_RSA_BITS {
                true => Ok(()),
                false => Err(format!(
                    "RSA keys must have at least {MIN_RSA_BITS} bits; this one has {bits}"
                )),
            }
        }
        KeyData::Dsa(_) => Err("DSA keys are not accepted".into()),
        other => Err(match other.algorithm() {
            Algorithm::SkEd25519 | Algorithm::SkEcdsaSha2NistP256 => format!(
                "security-key ({}) keys are not accepted; \
                 accepted are ed25519, ECDSA (nistp256/384/521) and RSA of {MIN_RSA_BITS} bits or more",
                other.algorithm().as_str()
            ),
            algorithm => format!(
                "{} keys are not accepted; \
                 accepted are ed25519, ECDSA (nistp256/384/521) and RSA of {MIN_RSA_BITS} bits or more",
                algorithm.as_str()
            ),
        }),
    }
}

/// An IPv4 network in CIDR notation, allowed to reach the VM over SSH.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Cidr(ipnet::Ipv4Net);

impl Cidr {
    /// A network as written, `192.0.2.0/24`: its address must be the network's first, so
    /// that what is allowed is what was meant (`192.0.2.1/24` is refused, not widened).
    pub fn parse(s: &str) -> Result<Self, ValueError> {
        let net = s.trim().parse::<ipnet::Ipv4Net>().map_err(|_| {
            ValueError::new(
                "allow_ssh_from",
                format!("{s:?} is not an IPv4 CIDR such as 192.0.2.0/24"),
            )
        })?;
        if net.addr() != net.network() {
            return Err(ValueError::new(
                "allow_ssh_from",
                format!("{s:?} has host bits set: the network is {}", net.trunc()),
            ));
        }
        Ok(Self(net))
    }

    /// The one address `ip`, as a /32.
    pub fn host(ip: std::net::Ipv4Addr) -> Self {
        Self(ipnet::Ipv4Net::new(ip, 32).expect("32 is a valid IPv4 prefix length"))
    }

    pub fn prefix_len(&self) -> u8 {
        self.0.prefix_len()
    }

    /// Refuses the whole Internet and networks wider than `/widest` (fewer prefix bits):
    /// SSH open to the world is how VMs get taken over.
    pub fn check_width(&self, widest: u8) -> Result<(), ValueError> {
        let err = |reason: String| Err(ValueError::new("allow_ssh_from", reason));
        if self.prefix_len() == 0 {
            return err(format!(
                "{self} would let the whole Internet reach SSH; name your own networks"
            ));
        }
        if self.prefix_len() < widest {
            return err(format!(
                "{self} is wider than /{widest}, the widest network this platform allows"
            ));
        }
        Ok(())
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
    /// Who asked for it: the only user, admins aside, who sees it. Absent from events of
    /// earlier versions, which belong to the built-in admin.
    #[serde(default = "builtin_admin")]
    pub owner: UserId,
    /// The taskservs to install, in order: the request's, with what they require, resolved
    /// against the deployment's catalog. Absent from events of earlier versions (none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub taskservs: Vec<crate::taskservs::PlannedTaskserv>,
    /// The cluster this VM is a node of, and its place there; `None` for a VM of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<Box<crate::cluster::ClusterMember>>,
}

fn default_username() -> String {
    "ubuntu".to_owned()
}

fn builtin_admin() -> UserId {
    UserId::BUILTIN_ADMIN
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ssh_keys_must_decode_as_openssh() {
        let key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEpXvA+cP8hcraKOw+cO1rzIpAv7ms7vMYjhAKF7Qed/ test@example";
        assert!(SshPublicKey::parse(key).is_ok());
        assert!(SshPublicKey::parse("ssh-ed25519 notbase64").is_err());
        assert!(SshPublicKey::parse("hello").is_err());
        let injected = format!("{}\nruncmd: [reboot]", key);
        assert!(SshPublicKey::parse(&injected).is_err());
    }

    const FINGERPRINT: &str = "SHA256:16NXSXWwKLOvPn4clXh86VT+zBN2M+ea9RBUvghtbXM";
    const RSA_2048: &str = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQDjz/IxrOG34zQNtntgEPYnTO8EBuumeFBzmI+oMEIy67YmS5ukVWGXyRXzh3Th4LNrRWJf3kB6YsTkBukswnfMnRRV90mEObIWKmfmSh2/f7nxTuXPuvTUWPhjHTahJnpJIE6kf6aZ4MqaCkROmm0Xc54/sMJqzYPV5G2jv8Hl4cURnOI6qbm4EltmnJ+zMX74vPVOlcHPU35LwudTbIKnN7drq7NE6KPFhzMMwSzV5PmB9EL4AanBa8v3BMxVkgGZfONPTy/7pmOsM3HIpaFouaBRyH/bItUVOpmGECkAWOVLFuNtNHlqkClIApiLR+vIaHBcMj19JPGe+YV64zKl rsa-2048@test";
    const DSA: &str = "ssh-dss AAAAB3NzaC1kc3MAAACBANeHp6UB5E0m7rgrIgKkb/F2J9hIHrhyhnSTnaJdODsd+GDldce3n2WnFq2+fwf/rfnaaPhNCRUp1LBZr5BfXz33wPRUkq67lyCwLLdqKFortylq756GR3Ey7iujfqiu5LrkM2RjwZR3Y6DeM773gOiN857WXepD9TNFRGbf3FbzAAAAFQD1mXqM+v+VJzVylBpbfKwM1tpBBwAAAIATEQn7CURCC+DGpZIZ2NF2UM3OP5zQVWPoOh9zDx/t6/+bUoFM9K0bxulVvNJReEtJ/uTWmL1VJrj/JJfJ3EA0PrqITQDiA9EZyH9nwSitm2igFhrZOHkHwzn3vGOhFrqGXR9VXIOO4gZucexHaxrXS9OlxXO2Fjt8i62oWwiQpQAAAIEAxoYwB51f58D/uYu7/lISZrSxYC8wo4HqTz81utDdwG8QACFx97X0S/P6LYmgKO/MwBSnATJPiv/gIOBJ8Aebrv3WDuYNwXWzSFKQzA96tcLbNxNVHuXPkFv1j0Qb3A1/HXZBcc0+MsX1RuuSV/eOZSEMQDPh9wUpZY+iEqkRVLs= dsa-1024@test";

    #[test]
    fn short_rsa_and_dsa_keys_are_refused_with_the_reason() {
        let rsa = SshPublicKey::parse_field("public_key", RSA_2048).unwrap_err();
        assert_eq!(rsa.field, "public_key");
        assert_eq!(
            rsa.reason,
            "RSA keys must have at least 3072 bits; this one has 2048"
        );
        let dsa = SshPublicKey::parse(DSA).unwrap_err();
        assert_eq!(dsa.field, "ssh_public_key");
        assert_eq!(dsa.reason, "DSA keys are not accepted");
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
        let host_bits = Cidr::parse("192.0.2.1/24").unwrap_err();
        assert_eq!(host_bits.field, "allow_ssh_from");
        assert!(host_bits.reason.contains("192.0.2.0/24"), "{host_bits}");
    }

    #[test]
    fn networks_wider_than_the_limit_are_refused() {
        let world = Cidr::parse("0.0.0.0/0").unwrap().check_width(16);
        assert!(world.unwrap_err().reason.contains("whole Internet"));
        let wide = Cidr::parse("10.0.0.0/8").unwrap().check_width(16);
        assert!(wide.unwrap_err().reason.contains("/16"));
        assert!(Cidr::parse("10.1.0.0/16").unwrap().check_width(16).is_ok());
        assert!(Cidr::host([192, 0, 2, 7].into()).check_width(16).is_ok());
        assert_eq!(
            Cidr::host([192, 0, 2, 7].into()).to_string(),
            "192.0.2.7/32"
        );
    }

    #[test]
    fn ssh_key_fingerprints_are_as_ssh_keygen_prints_them() {
        // `ssh-keygen -l -E sha256` of this key.
        let key = SshPublicKey::parse(
            "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEpXvA+cP8hcraKOw+cO1rzIpAv7ms7vMYjhAKF7Qed/ t@e",
        )
        .unwrap();
        assert_eq!(key.fingerprint(), FINGERPRINT);
        assert_eq!(key.algorithm(), "ssh-ed25519");
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
