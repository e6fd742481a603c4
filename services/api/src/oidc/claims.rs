//! Who signed in, from the claims of the ID token and the userinfo answer.

use base64::Engine;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Every claim beyond the standard ones, by name: the groups claim is configurable.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Extra {
    #[serde(flatten)]
    pub claims: Map<String, Value>,
}

impl openidconnect::AdditionalClaims for Extra {}

/// The profile a sign-in records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Profile {
    pub subject: String,
    /// Lowercased.
    pub email: Option<String>,
    /// Whether the provider says it verified `email` (`email_verified`).
    pub email_verified: bool,
    pub name: Option<String>,
    pub groups: Vec<String>,
}

/// The claims of a JWT's payload, which must have been verified already.
pub(crate) fn payload(jwt: &str) -> Option<Map<String, Value>> {
    let part = jwt.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(part.trim_end_matches('='))
        .ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Whether `claims` say their email is verified: `email_verified` true (or `"true"`, as a
/// few providers send it); absent or anything else is unverified.
pub(crate) fn email_verified(claims: &Map<String, Value>) -> bool {
    match claims.get("email_verified") {
        Some(Value::Bool(verified)) => *verified,
        Some(Value::String(text)) => text == "true",
        _ => false,
    }
}

/// The groups in `claim` (`a.b` names claim `b` inside object `a`): a list of strings or
/// one string; anything else is no group.
pub(crate) fn groups(claims: &Map<String, Value>, claim: &str) -> Vec<String> {
    let mut parts = claim.split('.');
    let mut value = parts.next().and_then(|first| claims.get(first));
    for part in parts {
        value = value.and_then(|v| v.get(part));
    }
    match value {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect(),
        Some(Value::String(one)) => vec![one.clone()],
        _ => vec![],
    }
}

/// The userinfo answer wins over the ID token for each claim it has.
pub(crate) fn merge(
    subject: String,
    id_token: &Map<String, Value>,
    userinfo: Option<&Map<String, Value>>,
    groups_claim: &str,
) -> Profile {
    let text = |name: &str| {
        userinfo
            .and_then(|u| u.get(name))
            .or_else(|| id_token.get(name))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let groups = match userinfo.map(|u| groups(u, groups_claim)) {
        Some(found) if !found.is_empty() => found,
        _ => groups(id_token, groups_claim),
    };
    // Verified or not, as said by the same answer as the email it is about.
    let email_source = match userinfo {
        Some(u) if u.get("email").and_then(Value::as_str).is_some() => u,
        _ => id_token,
    };
    Profile {
        subject,
        email: text("email").map(|e| e.trim().to_lowercase()),
        email_verified: email_verified(email_source),
        name: text("name").or_else(|| text("preferred_username")),
        groups,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn groups_are_a_list_a_string_or_nested() {
        let claims = map(json!({"groups": ["a", "b", 3], "one": "x",
                                "realm_access": {"roles": ["admin"]}, "n": 5}));
        assert_eq!(groups(&claims, "groups"), ["a", "b"]);
        assert_eq!(groups(&claims, "one"), ["x"]);
        assert_eq!(groups(&claims, "realm_access.roles"), ["admin"]);
        assert!(groups(&claims, "n").is_empty());
        assert!(groups(&claims, "missing").is_empty());
    }

    #[test]
    fn userinfo_wins_over_the_id_token() {
        let id = map(json!({"email": "Old@Example.org", "name": "Old", "groups": ["g1"]}));
        let info = map(json!({"email": "New@Example.org"}));
        let profile = merge("s".into(), &id, Some(&info), "groups");
        assert_eq!(profile.email.as_deref(), Some("new@example.org"));
        assert_eq!(profile.name.as_deref(), Some("Old"));
        assert_eq!(profile.groups, ["g1"]);
    }

    #[test]
    fn an_email_is_verified_only_when_the_answer_that_gave_it_says_so() {
        let id = map(json!({"email": "a@example.org", "email_verified": true}));
        let verified = merge("s".into(), &id, None, "groups");
        assert!(verified.email_verified);
        let info = map(json!({"email": "b@example.org"}));
        let other = merge("s".into(), &id, Some(&info), "groups");
        assert!(
            !other.email_verified,
            "the ID token vouched for another email"
        );
        for unverified in [
            json!({}),
            json!({"email_verified": false}),
            json!({"email_verified": 1}),
        ] {
            assert!(!email_verified(&map(unverified.clone())), "{unverified}");
        }
        assert!(email_verified(&map(json!({"email_verified": "true"}))));
    }
}
