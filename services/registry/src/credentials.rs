//! Credential values for the local executor: from the daemon's environment, or from an
//! age-encrypted file of `NAME=value` lines. Values are kept as secrets; no error message
//! names a value.

use std::collections::HashMap;
use std::path::Path;
use std::str::FromStr;

use secrecy::SecretString;

use crate::{Provider, Registry};

#[derive(Debug, thiserror::Error)]
pub enum CredentialError {
    #[error("could not read {path}: {reason}")]
    File { path: String, reason: String },
    #[error("provider {provider:?} needs credential {name}, which is not set")]
    Missing { provider: String, name: String },
}

/// The credential values the daemon holds, by source name (the `env` of the registry).
#[derive(Default, Clone)]
pub struct Credentials {
    values: HashMap<String, SecretString>,
    /// Runners get Secret references, not values (Kubernetes executor): a credential is
    /// present when the registry names its Secret.
    by_reference: bool,
}

impl Credentials {
    /// Collects the value of every `env` source of the registry: the encrypted file's value
    /// if it has one, else `lookup` (the daemon's environment).
    pub fn resolve(
        registry: &Registry,
        lookup: impl Fn(&str) -> Option<String>,
        file: HashMap<String, SecretString>,
    ) -> Self {
        let mut values = HashMap::new();
        for credential in registry.providers.iter().flat_map(|p| &p.credentials) {
            let Some(source) = &credential.env else {
                continue;
            };
            let value = file.get(source).cloned().or_else(|| {
                lookup(source)
                    .filter(|v| !v.is_empty())
                    .map(SecretString::from)
            });
            if let Some(value) = value {
                values.insert(source.clone(), value);
            }
        }
        Self {
            values,
            by_reference: false,
        }
    }

    /// For an executor that hands runners Secret references: the daemon holds no values.
    pub fn by_reference() -> Self {
        Self {
            values: HashMap::new(),
            by_reference: true,
        }
    }

    /// Decrypts an age file of `NAME=value` lines with the identities of `identity_file`.
    pub fn read_age_file(
        path: &Path,
        identity_file: &Path,
    ) -> Result<HashMap<String, SecretString>, CredentialError> {
        let fail = |path: &Path, reason: String| CredentialError::File {
            path: path.display().to_string(),
            reason,
        };
        let identities = std::fs::read_to_string(identity_file)
            .map_err(|e| fail(identity_file, e.to_string()))?;
        let identity = identities
            .lines()
            .map(str::trim)
            .find(|l| l.starts_with("AGE-SECRET-KEY-"))
            .and_then(|l| age::x25519::Identity::from_str(l).ok())
            .ok_or_else(|| fail(identity_file, "holds no age identity".into()))?;
        let ciphertext = std::fs::read(path).map_err(|e| fail(path, e.to_string()))?;
        let plaintext = age::decrypt(&identity, &ciphertext)
            .map_err(|e| fail(path, format!("cannot decrypt: {e}")))?;
        let text = String::from_utf8(plaintext).map_err(|_| fail(path, "is not UTF-8".into()))?;
        Ok(text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.trim().to_owned(), SecretString::from(v.trim().to_owned())))
            .collect())
    }

    /// The value of one credential, if the daemon holds it.
    pub fn value(&self, credential: &crate::Credential) -> Option<SecretString> {
        credential
            .env
            .as_ref()
            .and_then(|source| self.values.get(source))
            .cloned()
    }

    /// Whether every credential of the provider is available to its runners: a value here,
    /// or a Secret reference when runners get references.
    pub fn present(&self, provider: &Provider) -> bool {
        if self.by_reference {
            return provider.credentials.iter().all(|c| c.secret.is_some());
        }
        self.runner_env(provider).is_ok()
    }

    /// The runner's environment for the provider's credentials.
    pub fn runner_env(
        &self,
        provider: &Provider,
    ) -> Result<Vec<(String, SecretString)>, CredentialError> {
        provider
            .credentials
            .iter()
            .map(|c| {
                c.env
                    .as_ref()
                    .and_then(|source| self.values.get(source))
                    .map(|value| (c.name.clone(), value.clone()))
                    .ok_or_else(|| CredentialError::Missing {
                        provider: provider.id.clone(),
                        name: c.env.clone().unwrap_or_else(|| c.name.clone()),
                    })
            })
            .collect()
    }
}
