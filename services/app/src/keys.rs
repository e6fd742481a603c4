//! SSH keys a user registers once and names in VM requests, or has the platform make. Each
//! key belongs to its owner: no use case sees or uses another owner's keys.

use domain::provisioning::{SshKeyName, SshPublicKey};
use ssh_key::rand_core::OsRng;
use uuid::Uuid;

use crate::{App, Caller, Error, Principal};

/// A registered key, as the store keeps it.
pub type SshKey = store::ssh_keys::SshKeyRow;

/// A key pair the platform made: the private key, for the caller only (never stored nor
/// logged), and the registered public key.
pub struct Generated {
    /// OpenSSH's format, without a passphrase.
    pub private_key: String,
    pub key: SshKey,
}

impl std::fmt::Debug for Generated {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Generated")
            .field("key", &self.key.id)
            .finish_non_exhaustive()
    }
}

impl App {
    /// Registers a public key for the caller; the same key again is a conflict.
    #[tracing::instrument(skip_all)]
    pub async fn add_ssh_key(
        &self,
        caller: &Caller,
        name: &SshKeyName,
        key: &SshPublicKey,
    ) -> Result<SshKey, Error> {
        self.register(&caller.principal, name, key).await
    }

    /// Makes an ed25519 key pair named `name` (also its comment) and registers its public
    /// key.
    #[tracing::instrument(skip_all)]
    pub async fn generate_ssh_key(
        &self,
        caller: &Caller,
        name: &SshKeyName,
    ) -> Result<Generated, Error> {
        // ssh-key's errors say what failed without any key material.
        let failed = |e: ssh_key::Error| Error::internal(format!("could not make a key pair: {e}"));
        let mut pair =
            ssh_key::PrivateKey::random(&mut OsRng, ssh_key::Algorithm::Ed25519).map_err(failed)?;
        pair.set_comment(name.as_str());
        let public = pair.public_key().to_openssh().map_err(failed)?;
        let key = SshPublicKey::parse_field("public_key", &public).map_err(Error::internal)?;
        let private_key = pair.to_openssh(ssh_key::LineEnding::LF).map_err(failed)?;
        let key = self.register(&caller.principal, name, &key).await?;
        Ok(Generated {
            private_key: private_key.to_string(),
            key,
        })
    }

    /// The caller's registered keys, oldest first.
    pub async fn ssh_keys(&self, owner: &Principal) -> Result<Vec<SshKey>, Error> {
        Ok(store::ssh_keys::list(&self.pool, &owner.owner_key()).await?)
    }

    /// One of the caller's keys.
    pub async fn ssh_key(&self, owner: &Principal, id: Uuid) -> Result<SshKey, Error> {
        store::ssh_keys::get(&self.pool, &owner.owner_key(), id)
            .await?
            .ok_or_else(|| Error::NotFound(format!("no SSH key {id}")))
    }

    /// Removes one of the caller's keys. VMs created with it keep their copy.
    #[tracing::instrument(skip_all, fields(key_id = %id))]
    pub async fn delete_ssh_key(&self, caller: &Caller, id: Uuid) -> Result<(), Error> {
        let owner = caller.principal.owner_key();
        match store::ssh_keys::delete(&self.pool, &owner, id).await? {
            true => Ok(()),
            false => Err(Error::NotFound(format!("no SSH key {id}"))),
        }
    }

    /// The public key of the caller's registered key `id` (as the client wrote it), for a
    /// VM request. Unknown, another owner's, or no longer acceptable: invalid, naming
    /// `ssh_key_id`.
    pub async fn registered_key(&self, owner: &Principal, id: &str) -> Result<SshPublicKey, Error> {
        let invalid = |reason: String| Error::invalid("ssh_key_id", reason);
        let uuid = Uuid::parse_str(id).map_err(|_| {
            invalid(format!(
                "{id:?} is not a key id (a UUID from /api/v1/ssh-keys)"
            ))
        })?;
        let row = store::ssh_keys::get(&self.pool, &owner.owner_key(), uuid)
            .await?
            .ok_or_else(|| invalid(format!("no SSH key {uuid} is registered")))?;
        Ok(SshPublicKey::parse_field("ssh_key_id", &row.public_key)?)
    }

    async fn register(
        &self,
        owner: &Principal,
        name: &SshKeyName,
        key: &SshPublicKey,
    ) -> Result<SshKey, Error> {
        let pool = &self.pool;
        let owner = owner.owner_key();
        if let Some(row) = store::ssh_keys::insert(pool, &owner, name.as_str(), key).await? {
            return Ok(row);
        }
        let fingerprint = key.fingerprint();
        let existing = store::ssh_keys::by_fingerprint(pool, &owner, &fingerprint).await?;
        Err(Error::Conflict(match existing {
            Some(row) => format!(
                "the key {fingerprint} is registered already, as {:?} (id {})",
                row.name, row.id
            ),
            // Deleted since: a retry registers it.
            None => format!("the key {fingerprint} was being registered at the same time"),
        }))
    }
}
