//! Runner messages are signed with a key given to their job alone: HMAC-SHA256 over the
//! subject and the body (which names the job and the report's line or beat), sent as the
//! `Provisioning-Signature` header. The job's key is derived from the
//! deployment's master secret and the job (`HMAC(master, vm_id, job_id)`), so the ingester
//! checks any job's messages without storing a key, and a runner, which knows only its own
//! job's key, cannot report for another job.

use std::fmt;

use domain::provisioning::{JobId, VmId};
use hmac::{Hmac, Mac};
use secrecy::SecretString;
use sha2::Sha256;

/// The header carrying a runner message's signature (lowercase hex).
pub const SIGNATURE_HEADER: &str = "Provisioning-Signature";

/// The fewest bytes a master secret may have.
pub const MIN_MASTER_LEN: usize = 16;

type HmacSha256 = Hmac<Sha256>;

/// The deployment's master secret, from which every job's key is derived.
#[derive(Clone)]
pub struct RunnerKeys {
    master: Vec<u8>,
}

impl fmt::Debug for RunnerKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("RunnerKeys(..)")
    }
}

/// One job's key: what its runner signs with.
#[derive(Clone, PartialEq, Eq)]
pub struct JobKey([u8; 32]);

impl fmt::Debug for JobKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("JobKey(..)")
    }
}

/// Why a runner message was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    #[error("the message carries no signature")]
    Missing,
    #[error("the signature does not match the message and its job")]
    Wrong,
}

impl RunnerKeys {
    /// `None` when the secret is shorter than [`MIN_MASTER_LEN`].
    pub fn new(master: Vec<u8>) -> Option<Self> {
        (master.len() >= MIN_MASTER_LEN).then_some(Self { master })
    }

    /// The key of job `job` of VM `vm` (job numbers count per VM).
    pub fn for_job(&self, vm: VmId, job: JobId) -> JobKey {
        let mut mac = HmacSha256::new_from_slice(&self.master).expect("HMAC takes any key");
        mac.update(format!("provisioning runner key v1:{vm}:{job}").as_bytes());
        JobKey(mac.finalize().into_bytes().into())
    }

    /// Checks a message that says it is of job `job` of VM `vm`.
    pub fn verify(
        &self,
        vm: VmId,
        job: JobId,
        subject: &str,
        payload: &[u8],
        signature: Option<&str>,
    ) -> Result<(), SignatureError> {
        let signature = signature.ok_or(SignatureError::Missing)?;
        let signature = hex::decode(signature.trim()).map_err(|_| SignatureError::Wrong)?;
        self.for_job(vm, job)
            .mac(subject, payload)
            .verify_slice(&signature)
            .map_err(|_| SignatureError::Wrong)
    }
}

impl JobKey {
    /// The key as the runner is given it (hex); keep it out of logs.
    pub fn to_secret(&self) -> SecretString {
        hex::encode(self.0).into()
    }

    /// A key given as [`JobKey::to_secret`] wrote it.
    pub fn parse(hex_key: &str) -> Option<Self> {
        hex::decode(hex_key.trim())
            .ok()?
            .try_into()
            .ok()
            .map(JobKey)
    }

    /// The signature of a message, for the [`SIGNATURE_HEADER`]: the same for the same
    /// message, so that one sent again is deduplicated.
    pub fn sign(&self, subject: &str, payload: &[u8]) -> String {
        hex::encode(self.mac(subject, payload).finalize().into_bytes())
    }

    /// Each field with its length first, so no two messages sign the same bytes.
    fn mac(&self, subject: &str, payload: &[u8]) -> HmacSha256 {
        let mut mac = HmacSha256::new_from_slice(&self.0).expect("HMAC takes any key");
        for field in [subject.as_bytes(), payload] {
            mac.update(&(field.len() as u64).to_be_bytes());
            mac.update(field);
        }
        mac
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SUBJECT: &str = "provisioning.runner.vm.1.log";
    const BODY: &[u8] = br#"{"kind":"log","line":7}"#;

    fn keys() -> RunnerKeys {
        RunnerKeys::new(b"a master secret of the deployment".to_vec()).unwrap()
    }

    fn vm(n: u32) -> VmId {
        format!("00000000-0000-4000-8000-{n:012}").parse().unwrap()
    }

    #[test]
    fn a_message_signed_with_its_jobs_key_is_accepted() {
        let (a, job) = (vm(1), JobId::new(3));
        let signature = keys().for_job(a, job).sign(SUBJECT, BODY);
        assert_eq!(
            keys().verify(a, job, SUBJECT, BODY, Some(&signature)),
            Ok(())
        );
        // The key the runner is given works as the daemon's.
        let given = JobKey::parse(secrecy::ExposeSecret::expose_secret(
            &keys().for_job(a, job).to_secret(),
        ))
        .unwrap();
        assert_eq!(given.sign(SUBJECT, BODY), signature);
    }

    #[test]
    fn tampering_with_any_field_or_signing_for_another_job_is_refused() {
        let (a, job) = (vm(1), JobId::new(3));
        let signature = keys().for_job(a, job).sign(SUBJECT, BODY);
        let check = |vm, job, subject: &str, body: &[u8], sig: Option<&str>| {
            keys().verify(vm, job, subject, body, sig)
        };
        let wrong = Err(SignatureError::Wrong);
        let sig = Some(signature.as_str());
        assert_eq!(
            check(a, job, "provisioning.runner.vm.1.result", BODY, sig),
            wrong
        );
        assert_eq!(
            check(a, job, SUBJECT, br#"{"kind":"log","line":8}"#, sig),
            wrong
        );
        // The same message claimed for another job of the VM, or the same job of another VM.
        assert_eq!(check(a, JobId::new(4), SUBJECT, BODY, sig), wrong);
        assert_eq!(check(vm(2), job, SUBJECT, BODY, sig), wrong);
        // Signed with another job's key, or with another deployment's master.
        let other_job = keys().for_job(vm(2), job).sign(SUBJECT, BODY);
        assert_eq!(check(a, job, SUBJECT, BODY, Some(&other_job)), wrong);
        let other_master = RunnerKeys::new(vec![7; 32]).unwrap();
        let forged = other_master.for_job(a, job).sign(SUBJECT, BODY);
        assert_eq!(check(a, job, SUBJECT, BODY, Some(&forged)), wrong);
        // A field's bytes moved into the next one.
        let shifted = keys()
            .for_job(a, job)
            .sign("provisioning.runner.vm.1.lo", b"g");
        assert_eq!(check(a, job, SUBJECT, b"", Some(&shifted)), wrong);
        // One bit of the signature changed, none at all, not hex.
        let mut flipped = hex::decode(&signature).unwrap();
        flipped[0] ^= 1;
        assert_eq!(
            check(a, job, SUBJECT, BODY, Some(&hex::encode(flipped))),
            wrong
        );
        assert_eq!(check(a, job, SUBJECT, BODY, Some("not hex")), wrong);
        assert_eq!(check(a, job, SUBJECT, BODY, Some("")), wrong);
        assert_eq!(
            check(a, job, SUBJECT, BODY, None),
            Err(SignatureError::Missing)
        );
    }

    #[test]
    fn a_short_master_secret_or_a_malformed_key_is_refused() {
        assert!(RunnerKeys::new(vec![1; MIN_MASTER_LEN - 1]).is_none());
        assert!(JobKey::parse("abcd").is_none());
        assert!(JobKey::parse("zz").is_none());
        assert_eq!(
            format!("{:?}", keys().for_job(vm(1), JobId::FIRST)),
            "JobKey(..)"
        );
    }
}
