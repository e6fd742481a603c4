//! The deploy key of a VM: the SSH key its install jobs log in with. It is derived from the
//! deployment's callback key and the VM's id, so it is never stored: the dispatcher makes
//! its public half for the VM's cloud-init at create, and both halves again for each
//! install job. Its private half reaches the runner as a credential (redacted from what the
//! runner publishes), never an event, a log line or a working directory.

use domain::callbacks::CallbackSigner;
use domain::provisioning::VmId;
use secrecy::{ExposeSecret, SecretString};
use ssh_key::private::Ed25519Keypair;
use ssh_key::{LineEnding, PrivateKey};

/// The label of the seed derivation: no other use of the callback key derives the same.
const LABEL: &[u8] = b"provisioning-deploy-key-v1";
/// The comment of the public key in the VM's `authorized_keys`.
pub const COMMENT: &str = "provisioning-deploy";

/// A VM's deploy key pair.
pub struct DeployKey {
    /// An OpenSSH public key line (`ssh-ed25519 AAAA... provisioning-deploy`).
    pub public: String,
    /// The OpenSSH private key file's text.
    pub private: SecretString,
}

impl std::fmt::Debug for DeployKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeployKey")
            .field("public", &self.public)
            .field("private", &"[redacted]")
            .finish()
    }
}

impl DeployKey {
    /// The deploy key of VM `vm`: the same for every call with the same callback key.
    pub fn derive(signer: &CallbackSigner, vm: VmId) -> Self {
        let seed =
            secrecy::zeroize::Zeroizing::new(signer.derive_seed(LABEL, vm.as_uuid().as_bytes()));
        let mut private = PrivateKey::from(Ed25519Keypair::from_seed(&seed));
        private.set_comment(COMMENT);
        let public = private
            .public_key()
            .to_openssh()
            .expect("an Ed25519 public key encodes");
        let pem = private
            .to_openssh(LineEnding::LF)
            .expect("an unencrypted Ed25519 key encodes");
        Self {
            public,
            private: SecretString::from(pem.as_str()),
        }
    }

    /// The private key file's text, for the runner's environment alone.
    pub fn private_pem(&self) -> &str {
        self.private.expose_secret()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signer(byte: u8) -> CallbackSigner {
        CallbackSigner::new(vec![byte; 32]).unwrap()
    }

    #[test]
    fn a_vm_s_deploy_key_is_the_same_at_each_derivation_and_differs_between_vms() {
        let vm = VmId::new();
        let first = DeployKey::derive(&signer(7), vm);
        let again = DeployKey::derive(&signer(7), vm);
        assert_eq!(first.public, again.public);
        assert_eq!(first.private_pem(), again.private_pem());
        assert!(first.public.starts_with("ssh-ed25519 "), "{}", first.public);
        assert!(
            first.public.ends_with(" provisioning-deploy"),
            "{}",
            first.public
        );
        assert!(first
            .private_pem()
            .starts_with("-----BEGIN OPENSSH PRIVATE KEY-----"));
        let parsed = PrivateKey::from_openssh(first.private_pem()).unwrap();
        assert_eq!(parsed.public_key().to_openssh().unwrap(), first.public);

        let other_vm = DeployKey::derive(&signer(7), VmId::new());
        assert_ne!(other_vm.public, first.public);
        let other_deployment = DeployKey::derive(&signer(8), vm);
        assert_ne!(other_deployment.public, first.public);
    }

    #[test]
    fn the_private_key_never_shows_in_debug() {
        let key = DeployKey::derive(&signer(7), VmId::new());
        let shown = format!("{key:?}");
        assert!(shown.contains(&key.public), "{shown}");
        assert!(!shown.contains("PRIVATE KEY"), "{shown}");
        for line in key
            .private_pem()
            .lines()
            .filter(|l| !l.starts_with("-----"))
        {
            assert!(!shown.contains(line), "{shown}");
        }
    }
}
