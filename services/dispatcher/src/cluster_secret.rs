//! The secret of a cluster: the join token its k3s nodes share, the password of its
//! PostgreSQL replication. It is derived from the deployment's callback key and the
//! cluster's id, so it is never stored and no node passes it to another: the dispatcher
//! makes it again for each node's cloud-init, which writes it to [`PATH`] (mode 0600,
//! root) before the taskservs run. It is in the user data, as the callback URLs are, and
//! never in an event, a log line, a read model or an error.

use bus::JobMessage;
use domain::callbacks::CallbackSigner;
use domain::cluster::ClusterId;
use domain::provisioning::JobAction;
use secrecy::{ExposeSecret, SecretString};

use crate::cloud_init::CallbackUrls;

/// The label of the derivation: no other use of the callback key derives the same.
const LABEL: &[u8] = b"provisioning-cluster-secret-v1";

/// Where a node's cloud-init writes it; the templates pass this path (`token_file`,
/// `secret_file`), never the secret.
pub const PATH: &str = "/var/lib/provisioning/cluster/secret";

/// A cluster's secret: 32 bytes, as 64 hexadecimal digits (safe in a k3s token file, a
/// PostgreSQL password and a `.pgpass` line).
pub struct ClusterSecret(SecretString);

impl std::fmt::Debug for ClusterSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ClusterSecret([redacted])")
    }
}

impl ClusterSecret {
    /// The secret of cluster `cluster`: the same for every call with the same callback key.
    pub fn derive(signer: &CallbackSigner, cluster: ClusterId) -> Self {
        let seed = secrecy::zeroize::Zeroizing::new(
            signer.derive_seed(LABEL, cluster.as_uuid().as_bytes()),
        );
        let mut hex = String::with_capacity(seed.len() * 2);
        for byte in seed.iter() {
            hex.push(char::from(HEX[usize::from(byte >> 4)]));
            hex.push(char::from(HEX[usize::from(byte & 0x0f)]));
        }
        Self(SecretString::from(hex))
    }

    /// The secret's text, for the VM's user data alone.
    pub fn expose(&self) -> &str {
        self.0.expose_secret()
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// The secret the VM of `job` gets: its cluster's, for a create job of a node; `None` for
/// other jobs (only a create renders the user data the VM boots with) and other VMs.
pub(crate) fn for_job(
    job: &JobMessage,
    callbacks: Option<&CallbackUrls>,
) -> Result<Option<ClusterSecret>, crate::WorkdirError> {
    let Some(member) = job.spec.cluster.as_ref() else {
        return Ok(None);
    };
    if job.action != JobAction::Create {
        return Ok(None);
    }
    let callbacks = callbacks.ok_or(crate::WorkdirError::NoClusterKey { cluster: member.id })?;
    Ok(Some(ClusterSecret::derive(&callbacks.signer, member.id)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signer(byte: u8) -> CallbackSigner {
        CallbackSigner::new(vec![byte; 32]).unwrap()
    }

    #[test]
    fn a_cluster_s_secret_is_the_same_at_each_derivation_and_differs_between_clusters() {
        let cluster = ClusterId::new();
        let first = ClusterSecret::derive(&signer(7), cluster);
        assert_eq!(
            first.expose(),
            ClusterSecret::derive(&signer(7), cluster).expose()
        );
        assert_eq!(first.expose().len(), 64);
        assert!(first.expose().chars().all(|c| c.is_ascii_hexdigit()));
        let other = ClusterSecret::derive(&signer(7), ClusterId::new());
        assert_ne!(other.expose(), first.expose());
        let other_deployment = ClusterSecret::derive(&signer(8), cluster);
        assert_ne!(other_deployment.expose(), first.expose());
    }

    #[test]
    fn the_secret_never_shows_in_debug() {
        let secret = ClusterSecret::derive(&signer(7), ClusterId::new());
        let shown = format!("{secret:?}");
        assert!(!shown.contains(secret.expose()), "{shown}");
    }
}

#[cfg(test)]
#[path = "cluster_secret_tests.rs"]
mod composed_tests;
