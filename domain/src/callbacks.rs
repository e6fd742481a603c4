//! Callback tokens: the last segment of the URLs a VM calls back at. Each is signed with
//! the deployment's callback key (HMAC-SHA256) and binds the VM, its create job, the
//! callback kind and an expiry, so a URL cannot be altered or used for another VM, job or
//! kind. Single use is the aggregate's part: it takes each kind once per job.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use time::OffsetDateTime;

use crate::provisioning::{CallbackKind, JobId, VmId};

/// What a token says: the VM, the create job whose VM boots, the kind, until when.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallbackClaims {
    pub vm: VmId,
    pub job: JobId,
    pub kind: CallbackKind,
    /// Unix seconds after which the token is refused.
    pub expires: i64,
    /// The taskserv step a taskserv kind reports on (its index in the plan); 0 otherwise.
    pub step: u8,
}

/// 16 bytes of VM id, 4 of job, 1 of kind, 8 of expiry, 1 of step. Tokens of earlier
/// versions have no step byte (29 bytes): they read as step 0.
const CLAIMS_LEN: usize = 30;
const CLAIMS_LEN_V1: usize = 29;
const MAC_LEN: usize = 32;

/// Signs and checks tokens with the deployment's key. The key is never shown.
#[derive(Clone)]
pub struct CallbackSigner {
    key: Vec<u8>,
}

impl std::fmt::Debug for CallbackSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CallbackSigner { key: [redacted] }")
    }
}

impl CallbackSigner {
    /// A signer with `key`; at least 32 bytes.
    pub fn new(key: Vec<u8>) -> Option<Self> {
        (key.len() >= 32).then_some(Self { key })
    }

    pub fn sign(&self, claims: &CallbackClaims) -> String {
        let bytes = encode(claims);
        let mut token = bytes.to_vec();
        token.extend_from_slice(&self.mac(&bytes).finalize().into_bytes());
        URL_SAFE_NO_PAD.encode(token)
    }

    /// The claims of `token` if it was signed with this key and has not expired at `now`.
    pub fn verify(&self, token: &str, now: OffsetDateTime) -> Option<CallbackClaims> {
        let bytes = URL_SAFE_NO_PAD.decode(token).ok()?;
        let len = bytes.len().checked_sub(MAC_LEN)?;
        if len != CLAIMS_LEN && len != CLAIMS_LEN_V1 {
            return None;
        }
        let (claims, mac) = bytes.split_at(len);
        self.mac(claims).verify_slice(mac).ok()?;
        let claims = decode(claims)?;
        (now.unix_timestamp() < claims.expires).then_some(claims)
    }

    /// 32 bytes derived from the deployment's key for `label` and `data`: a per-VM secret
    /// (its deploy key's seed) that is never stored, since the daemon can make it again.
    /// Each use has its own `label`, so no derived value is ever a valid token's MAC.
    pub fn derive_seed(&self, label: &[u8], data: &[u8]) -> [u8; 32] {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.key).expect("HMAC takes any key");
        mac.update(&(label.len() as u64).to_be_bytes());
        mac.update(label);
        mac.update(data);
        mac.finalize().into_bytes().into()
    }

    fn mac(&self, bytes: &[u8]) -> Hmac<Sha256> {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.key).expect("HMAC takes any key");
        mac.update(b"provisioning-callback-v1\0");
        mac.update(bytes);
        mac
    }
}

fn encode(claims: &CallbackClaims) -> [u8; CLAIMS_LEN] {
    let mut bytes = [0u8; CLAIMS_LEN];
    bytes[..16].copy_from_slice(claims.vm.as_uuid().as_bytes());
    bytes[16..20].copy_from_slice(&claims.job.get().to_be_bytes());
    bytes[20] = CallbackKind::ALL
        .iter()
        .position(|k| *k == claims.kind)
        .expect("every kind is in ALL") as u8;
    bytes[21..29].copy_from_slice(&claims.expires.to_be_bytes());
    bytes[29] = claims.step;
    bytes
}

fn decode(bytes: &[u8]) -> Option<CallbackClaims> {
    let vm = uuid::Uuid::from_slice(&bytes[..16]).ok()?;
    let job = u32::from_be_bytes(bytes[16..20].try_into().ok()?);
    let kind = *CallbackKind::ALL.get(bytes[20] as usize)?;
    let expires = i64::from_be_bytes(bytes[21..29].try_into().ok()?);
    let step = bytes.get(29).copied().unwrap_or(0);
    Some(CallbackClaims {
        vm: vm.into(),
        job: JobId::new(job),
        kind,
        expires,
        step,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signer(byte: u8) -> CallbackSigner {
        CallbackSigner::new(vec![byte; 32]).unwrap()
    }

    fn claims() -> CallbackClaims {
        CallbackClaims {
            vm: VmId::new(),
            job: JobId::new(3),
            kind: CallbackKind::PhoneHome,
            expires: 2_000_000_000,
            step: 0,
        }
    }

    fn now() -> OffsetDateTime {
        OffsetDateTime::from_unix_timestamp(1_999_999_000).unwrap()
    }

    #[test]
    fn a_signed_token_gives_back_its_claims_until_it_expires() {
        let claims = claims();
        let token = signer(1).sign(&claims);
        assert_eq!(signer(1).verify(&token, now()), Some(claims));
        let later = OffsetDateTime::from_unix_timestamp(claims.expires).unwrap();
        assert_eq!(signer(1).verify(&token, later), None);
    }

    #[test]
    fn an_altered_or_foreign_token_is_refused() {
        let token = signer(1).sign(&claims());
        assert_eq!(signer(2).verify(&token, now()), None, "another key");
        let mut bytes = URL_SAFE_NO_PAD.decode(&token).unwrap();
        bytes[20] = 0; // another kind
        assert_eq!(
            signer(1).verify(&URL_SAFE_NO_PAD.encode(&bytes), now()),
            None
        );
        assert_eq!(signer(1).verify("not-a-token", now()), None);
        assert_eq!(signer(1).verify(&token[..40], now()), None);
    }

    #[test]
    fn a_taskserv_token_binds_its_step_and_an_earlier_token_still_checks() {
        let step = CallbackClaims {
            kind: CallbackKind::TaskservInstalled,
            step: 3,
            ..claims()
        };
        let token = signer(1).sign(&step);
        assert_eq!(signer(1).verify(&token, now()), Some(step));
        let mut bytes = URL_SAFE_NO_PAD.decode(&token).unwrap();
        bytes[29] = 4; // another step
        assert_eq!(
            signer(1).verify(&URL_SAFE_NO_PAD.encode(&bytes), now()),
            None
        );
        // A token of the earlier layout: 29 bytes of claims, signed as they were.
        let old = claims();
        let v1 = &encode(&old)[..CLAIMS_LEN_V1];
        let mut token = v1.to_vec();
        token.extend_from_slice(&signer(1).mac(v1).finalize().into_bytes());
        let token = URL_SAFE_NO_PAD.encode(token);
        assert_eq!(signer(1).verify(&token, now()), Some(old));
    }

    #[test]
    fn derived_seeds_differ_by_label_data_and_key_and_are_stable() {
        let seed = signer(1).derive_seed(b"label-a", b"vm-1");
        assert_eq!(seed, signer(1).derive_seed(b"label-a", b"vm-1"));
        assert_ne!(seed, signer(1).derive_seed(b"label-b", b"vm-1"));
        assert_ne!(seed, signer(1).derive_seed(b"label-a", b"vm-2"));
        assert_ne!(seed, signer(2).derive_seed(b"label-a", b"vm-1"));
    }

    #[test]
    fn short_keys_are_refused() {
        assert!(CallbackSigner::new(vec![0; 16]).is_none());
    }
}
