//! Who may reach a VM over SSH: the networks of a request, checked against the platform's
//! limit, and `me`, the caller's own address.

use std::net::IpAddr;

use domain::provisioning::Cidr;

use crate::{ClientAddr, Error};

/// The widest network a VM's SSH may be opened to, by default: a /16.
pub const DEFAULT_WIDEST_PREFIX: u8 = 16;

/// The most entries `allow_ssh_from` may have: a VM's spec travels whole in its job
/// messages, which must fit a NATS message.
pub const MAX_ALLOW_SSH_FROM: usize = 32;

/// The networks of `entries`: IPv4 CIDRs within the platform's limit, and `me` for the
/// caller's address as a /32, each once, in the order given. The first problem names its
/// entry.
pub fn allowed_networks(
    widest_prefix: u8,
    entries: &[String],
    caller: &ClientAddr,
) -> Result<Vec<Cidr>, Error> {
    let invalid = |reason: String| Error::invalid("allow_ssh_from", reason);
    if entries.is_empty() {
        return Err(invalid("must name at least one network".into()));
    }
    if entries.len() > MAX_ALLOW_SSH_FROM {
        return Err(invalid(format!(
            "must name at most {MAX_ALLOW_SSH_FROM} networks, not {}",
            entries.len()
        )));
    }
    let mut networks = Vec::with_capacity(entries.len());
    let mut seen = std::collections::HashSet::with_capacity(entries.len());
    for entry in entries {
        let network = match entry.trim() {
            "me" => me(caller).map_err(invalid)?,
            cidr => Cidr::parse(cidr)?,
        };
        network.check_width(widest_prefix)?;
        if seen.insert(network) {
            networks.push(network);
        }
    }
    Ok(networks)
}

/// `me`: the caller's IPv4 address as a /32.
fn me(caller: &ClientAddr) -> Result<Cidr, String> {
    match &caller.0 {
        Err(why) => Err(format!("\"me\" cannot be used: {why}")),
        Ok(ip) => match ip.to_canonical() {
            IpAddr::V4(v4) => Ok(Cidr::host(v4)),
            IpAddr::V6(v6) => Err(format!(
                "\"me\" is {v6}, an IPv6 address, and VMs take IPv4 networks only: \
                 name your IPv4 network instead"
            )),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caller(ip: &str) -> ClientAddr {
        ClientAddr(Ok(ip.parse().unwrap()))
    }

    fn networks(entries: &[&str], from: &ClientAddr) -> Result<Vec<String>, String> {
        let entries: Vec<String> = entries.iter().map(|e| e.to_string()).collect();
        allowed_networks(DEFAULT_WIDEST_PREFIX, &entries, from)
            .map(|n| n.iter().map(Cidr::to_string).collect())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn me_is_the_callers_address_as_a_host_network() {
        let from = caller("198.51.100.7");
        assert_eq!(
            networks(&["me", "192.0.2.0/24"], &from).unwrap(),
            ["198.51.100.7/32", "192.0.2.0/24"]
        );
        // An IPv4 peer of a dual-stack listener.
        assert_eq!(
            networks(&["me"], &caller("::ffff:198.51.100.7")).unwrap(),
            ["198.51.100.7/32"]
        );
    }

    #[test]
    fn me_from_an_ipv6_caller_or_an_unknown_one_is_refused_with_the_reason() {
        let v6 = networks(&["me"], &caller("2001:db8::1")).unwrap_err();
        assert!(v6.starts_with("allow_ssh_from: "), "{v6}");
        assert!(v6.contains("IPv6"), "{v6}");
        let unknown = ClientAddr(Err("the X-Forwarded-For header is missing".into()));
        let err = networks(&["me"], &unknown).unwrap_err();
        assert!(err.contains("X-Forwarded-For"), "{err}");
    }

    #[test]
    fn wide_networks_are_refused_and_a_slash_16_is_not() {
        let from = caller("192.0.2.1");
        assert!(networks(&["0.0.0.0/0"], &from).is_err());
        assert!(networks(&["10.0.0.0/8"], &from).is_err());
        assert!(networks(&["10.1.0.0/16"], &from).is_ok());
        assert!(networks(&[], &from).is_err());
    }

    #[test]
    fn at_most_32_networks_are_taken_and_repeats_count_once() {
        let from = caller("192.0.2.1");
        let many: Vec<String> = (0..33).map(|i| format!("10.0.{i}.0/24")).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        let err = networks(&many, &from).unwrap_err();
        assert_eq!(err, "allow_ssh_from: must name at most 32 networks, not 33");
        assert_eq!(networks(&many[..32], &from).unwrap().len(), 32);
        assert_eq!(
            networks(&["me", "192.0.2.1/32", "10.1.0.0/16", "me"], &from).unwrap(),
            ["192.0.2.1/32", "10.1.0.0/16"]
        );
    }
}
