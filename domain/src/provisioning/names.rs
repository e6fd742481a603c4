//! A VM's display name, as its owner typed it, and the host name derived from it.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::values::ValueError;

/// The longest VM name, and the longest host name: a DNS label's limit (RFC 1035).
pub const MAX_NAME_LEN: usize = 63;

/// A VM's display name: 1 to 63 characters of `[A-Za-z0-9._-]`, what NAIC's frontend lets
/// through (`My_VM.1`). Shown as given; where a cloud or the VM needs a host name it gets
/// [`VmName::host_name`] instead, since `_`, `.` and capitals are no host name's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct VmName(String);

impl VmName {
    pub fn parse(s: &str) -> Result<Self, ValueError> {
        let err = |reason| Err(ValueError::new("name", reason));
        if s.is_empty() || s.len() > MAX_NAME_LEN {
            return err("must be 1 to 63 characters long");
        }
        if !s
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        {
            return err("may contain only letters, digits, '.', '_' and '-'");
        }
        Ok(Self(s.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The DNS-safe host name of this VM; the same name always gives the same host name.
    pub fn host_name(&self) -> HostName {
        HostName::from_name(&self.0)
    }
}

/// A host name derived from a [`VmName`]: 1 to 63 characters of `[a-z0-9-]`, starting with a
/// letter and not ending with `-`, so it is a valid host name and resource name on every
/// cloud. A name that already is one (`web-1`) is its own host name, so VMs named under the
/// older, stricter rule keep theirs.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct HostName(String);

/// What a host name starts with when its VM's name does not start with a letter.
const PREFIX: &str = "vm-";

impl HostName {
    /// Lower case, `.` and `_` as `-`, no `-` at either end; `vm-` before it when it does
    /// not start with a letter; cut to 63 characters. Anything else a name cannot hold
    /// (it was parsed) becomes `-` too, so this never fails.
    fn from_name(name: &str) -> Self {
        let mapped: String = name
            .chars()
            .map(|c| match c.to_ascii_lowercase() {
                c @ ('a'..='z' | '0'..='9') => c,
                _ => '-',
            })
            .collect();
        let trimmed = mapped.trim_matches('-');
        let mut host = match trimmed.starts_with(|c: char| c.is_ascii_lowercase()) {
            true => trimmed.to_owned(),
            false => format!("{PREFIX}{trimmed}"),
        };
        host.truncate(MAX_NAME_LEN);
        let host = host.trim_end_matches('-');
        Self(host.to_owned())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for HostName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(name: &str) -> String {
        VmName::parse(name).unwrap().host_name().to_string()
    }

    #[test]
    fn vm_names_are_what_naic_s_frontend_lets_through() {
        for good in [
            "web-1", "My_VM.1", "1web", "-web", "Web", "web_1", "...", "a",
        ] {
            assert_eq!(VmName::parse(good).unwrap().as_str(), good);
        }
        assert!(VmName::parse(&"A".repeat(63)).is_ok());
        for bad in [
            "",
            "wéb",
            "web 1",
            "web\n",
            "a\u{0}b",
            "web/1",
            "web:1",
            &"a".repeat(64),
        ] {
            let err = VmName::parse(bad).unwrap_err();
            assert_eq!(err.field, "name", "{bad:?}");
        }
    }

    #[test]
    fn a_name_that_is_a_host_name_is_its_own() {
        assert_eq!(host("web-1"), "web-1");
        assert_eq!(host(&"a".repeat(63)), "a".repeat(63));
    }

    #[test]
    fn host_names_are_lower_case_with_dashes_for_dots_and_underscores() {
        assert_eq!(host("My_VM.1"), "my-vm-1");
        assert_eq!(host("Web.Example_Org"), "web-example-org");
        assert_eq!(host("a__b"), "a--b");
    }

    #[test]
    fn host_names_start_with_a_letter_and_end_without_a_dash() {
        assert_eq!(host("_web_"), "web");
        assert_eq!(host("-.web.-"), "web");
        assert_eq!(host("1web"), "vm-1web");
        assert_eq!(host(".1"), "vm-1");
        assert_eq!(host("..."), "vm");
        assert_eq!(host("-"), "vm");
        assert_eq!(host("007"), "vm-007");
    }

    #[test]
    fn host_names_are_at_most_63_characters() {
        let long = host(&"1".repeat(63));
        assert_eq!(long.len(), 63);
        assert!(long.starts_with("vm-111"));
        // Cut just after a dash: the dash goes too.
        let name = format!("9{}_b", "a".repeat(58));
        let cut = host(&name);
        assert_eq!(cut, format!("vm-9{}", "a".repeat(58)));
    }

    #[test]
    fn every_name_gives_a_valid_host_name_and_always_the_same() {
        let alphabet: Vec<char> = "aZ09._-".chars().collect();
        // Every name of up to 4 characters from a sample of each class.
        let mut names = vec![String::new()];
        for _ in 0..4 {
            names = names
                .iter()
                .flat_map(|n| alphabet.iter().map(move |c| format!("{n}{c}")))
                .collect();
            for name in &names {
                let parsed = VmName::parse(name).unwrap();
                let host = parsed.host_name();
                assert_eq!(host, parsed.host_name());
                let h = host.as_str();
                assert!(!h.is_empty() && h.len() <= 63, "{name:?} -> {h:?}");
                assert!(h.starts_with(|c: char| c.is_ascii_lowercase()), "{name:?}");
                assert!(!h.ends_with('-'), "{name:?} -> {h:?}");
                assert!(h
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'));
            }
        }
    }
}
