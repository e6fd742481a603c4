//! Whether a VM's job messages fit in a NATS message. A VM's spec travels whole in its
//! `Requested` and every `JobQueued` event and in each job message; one the relay could not
//! publish would leave the VM with a job no dispatcher ever sees (its destroy included).
//! So a create is refused, before anything is recorded, when its messages would not fit.

use bus::{EventEnvelope, JobMessage, ENVELOPE_VERSION};
use domain::provisioning::{Provisioning, ProvisioningCommand, ProvisioningEvent, VmId, VmSpec};
use domain::Decide;
use time::OffsetDateTime;

use crate::Error;

/// Stands in for the actor an envelope names: longer than any the API records
/// (`user:` and a UUID).
const ACTOR: &str = "user:00000000-0000-0000-0000-000000000000-and-room-to-spare";

/// The size in bytes of the largest message the relay would publish for the create of `vm`
/// with `spec`: the envelopes of its events and its job message. Later jobs of the VM carry
/// the same spec, so they are as large, give or take a few digits.
pub(crate) fn largest_message(vm: VmId, spec: &VmSpec, correlation_id: &str) -> usize {
    let now = OffsetDateTime::now_utc();
    let command = ProvisioningCommand::Request {
        spec: spec.clone(),
        at: now,
    };
    let events = Provisioning::default()
        .decide(command, &())
        .unwrap_or_default();
    let mut largest = 0;
    for (sequence, event) in (1..).zip(&events) {
        let stored = serde_json::to_value(event).expect("events are plain data");
        let envelope = EventEnvelope {
            version: ENVELOPE_VERSION,
            aggregate_type: "Provisioning".into(),
            aggregate_id: vm.to_string(),
            provider: Some(spec.provider.as_str().to_owned()),
            position: i64::MAX,
            sequence,
            event_type: event.name().to_owned(),
            recorded_at: now,
            actor: Some(ACTOR.into()),
            correlation_id: Some(correlation_id.to_owned()),
            data: stored.get("data").cloned().unwrap_or_default(),
        };
        largest = largest.max(encoded_len(&envelope));
        if let ProvisioningEvent::JobQueued {
            job_id,
            action,
            spec,
        } = event
        {
            let job = JobMessage {
                vm_id: vm,
                job_id: *job_id,
                action: *action,
                spec: spec.clone(),
            };
            largest = largest.max(encoded_len(&job));
        }
    }
    largest
}

fn encoded_len(message: &impl serde::Serialize) -> usize {
    serde_json::to_vec(message)
        .expect("messages are plain data")
        .len()
}

/// Refused as too large when the create's messages would be larger than `limit` (the bus's payload limit).
pub(crate) fn check(
    vm: VmId,
    spec: &VmSpec,
    correlation_id: &str,
    limit: usize,
) -> Result<(), Error> {
    let size = largest_message(vm, spec, correlation_id);
    match size <= limit {
        true => Ok(()),
        false => Err(Error::TooLarge(format!(
            "body: the VM's job message would take {size} bytes, more than the {limit} a \
             message may carry on this platform's NATS; use a shorter ssh_public_key or fewer \
             allow_ssh_from entries"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use domain::provisioning::{
        Cidr, DurationHours, ProviderId, SshPublicKey, TemplateId, VmName, MAX_SSH_KEY_LEN,
    };

    use super::*;
    use crate::network::MAX_ALLOW_SSH_FROM;

    /// The largest spec a create accepts: every text at its longest, in characters that
    /// take the most bytes in JSON (quotes are escaped, 4-byte characters are not), the
    /// longest key and every network.
    fn largest_spec() -> VmSpec {
        let base =
            "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEpXvA+cP8hcraKOw+cO1rzIpAv7ms7vMYjhAKF7Qed/ ";
        let comment = "\"".repeat(MAX_SSH_KEY_LEN - base.len());
        let key = SshPublicKey::parse(&format!("{base}{comment}")).unwrap();
        assert!(
            key.as_str().len() >= MAX_SSH_KEY_LEN - 1,
            "{}",
            key.as_str().len()
        );
        // Catalog texts: at most 200 characters.
        let text = "\u{1F600}".repeat(200);
        VmSpec {
            name: VmName::parse(&"a".repeat(63)).unwrap(),
            provider: ProviderId::parse(&"p".repeat(64)).unwrap(),
            template: TemplateId::parse(&"t".repeat(64)).unwrap(),
            image_name: text.clone(),
            flavor_name: text.clone(),
            ssh_public_key: key,
            allow_ssh_from: (0..MAX_ALLOW_SSH_FROM)
                .map(|i| Cidr::parse(&format!("192.168.{i}.255/32")).unwrap())
                .collect(),
            duration_hours: DurationHours::parse(168).unwrap(),
            username: text,
            owner: domain::identity::UserId::BUILTIN_ADMIN,
            taskservs: vec![],
            cluster: None,
        }
    }

    #[test]
    fn the_largest_spec_a_create_accepts_fits_in_a_default_nats_message() {
        let spec = largest_spec();
        let size = largest_message(VmId::new(), &spec, &"r".repeat(128));
        // NATS' default `max_payload` is 1 MiB; the bus keeps 4 KiB for headers.
        let limit = 1024 * 1024 - bus::HEADER_ROOM;
        assert!(size < limit / 8, "{size} bytes");
        assert!(check(VmId::new(), &spec, "r", limit).is_ok());
    }

    #[test]
    fn a_spec_whose_messages_would_not_fit_is_refused_as_too_large() {
        let spec = largest_spec();
        let error = check(VmId::new(), &spec, "r", 16 * 1024).unwrap_err();
        assert!(matches!(error, Error::TooLarge(_)), "{error}");
        assert!(error.to_string().starts_with("body: "), "{error}");
    }
}
