//! References from a taskserv's params to another role's outputs, written
//! `{{ roles.<role>[<index>].outputs.<key> }}` inside a string param. They stay as written in
//! the template; the coordinator renders them when it requests the node. Here they are
//! only read, so that a template naming a role that does not exist, or one made later, is
//! refused at load.

/// One reference: node `index` of `role`, its output `key`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    pub role: String,
    pub index: u32,
    pub key: String,
}

/// The references in `value`, in order; an error for a `{{ ... }}` that is not one.
pub fn references_in(value: &str) -> Result<Vec<Reference>, String> {
    let mut found = Vec::new();
    let mut rest = value;
    while let Some(start) = rest.find("{{") {
        let after = &rest[start + 2..];
        let end = after
            .find("}}")
            .ok_or_else(|| format!("{value:?} opens {{{{ without closing it"))?;
        let inner = after[..end].trim();
        found.push(parse(inner).ok_or_else(|| {
            format!("{{{{ {inner} }}}} is not a reference: write {{{{ roles.<role>[<index>].outputs.<key> }}}}")
        })?);
        rest = &after[end + 2..];
    }
    Ok(found)
}

/// Whether `value` is one reference and nothing else (it may stand for a number or a bool).
pub fn is_whole_reference(value: &str) -> bool {
    let trimmed = value.trim();
    trimmed.starts_with("{{")
        && trimmed.ends_with("}}")
        && trimmed.matches("{{").count() == 1
        && references_in(trimmed).is_ok_and(|r| r.len() == 1)
}

fn parse(inner: &str) -> Option<Reference> {
    let rest = inner.strip_prefix("roles.")?;
    let (role, rest) = rest.split_once('[')?;
    let (index, rest) = rest.split_once(']')?;
    let key = rest.strip_prefix(".outputs.")?;
    let word = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    };
    if !word(role) || !word(key) {
        return None;
    }
    Some(Reference {
        role: role.to_owned(),
        index: index.parse().ok()?,
        key: key.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reference_names_the_role_the_node_and_the_output() {
        let refs = references_in("{{ roles.server[0].outputs.server_url }}").unwrap();
        assert_eq!(
            refs,
            [Reference {
                role: "server".into(),
                index: 0,
                key: "server_url".into()
            }]
        );
        assert!(is_whole_reference(
            " {{roles.server[0].outputs.server_url}} "
        ));
    }

    #[test]
    fn text_around_references_is_kept_and_several_are_read() {
        let refs =
            references_in("https://{{ roles.a[1].outputs.host }}:{{ roles.b[0].outputs.port }}/")
                .unwrap();
        assert_eq!(refs.len(), 2);
        assert!(!is_whole_reference("x{{ roles.a[1].outputs.host }}"));
        assert!(references_in("no reference").unwrap().is_empty());
    }

    #[test]
    fn something_else_between_braces_is_refused() {
        assert!(references_in("{{ vm.address }}").is_err());
        assert!(references_in("{{ roles.server.outputs.url }}").is_err());
        assert!(references_in("{{ roles.server[0].outputs.url").is_err());
    }
}
