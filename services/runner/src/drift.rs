//! What a refresh found changed outside Terraform, read from the JSON representation of
//! its saved plan (`terraform show -json <plan>`): its `resource_drift` array holds each
//! drifted resource with its values before and after. Only the addresses, the actions and
//! the names of the changed attributes are kept: the document itself holds every value in
//! plain text, sensitive ones and the variables included, and is never published.

use domain::provisioning::DriftedResource;
use serde_json::Value;

/// The drifted resources of a plan document, in Terraform's order. Entries whose action is
/// `no-op` (some Terraform versions list unchanged resources too) are left out. A
/// document without `resource_drift` (no drift, or a Terraform that does not report it)
/// has none.
pub fn from_plan(plan: &Value) -> Vec<DriftedResource> {
    let Some(entries) = plan.get("resource_drift").and_then(Value::as_array) else {
        return vec![];
    };
    entries.iter().filter_map(drifted).collect()
}

fn drifted(entry: &Value) -> Option<DriftedResource> {
    let address = entry.get("address")?.as_str()?.to_owned();
    let change = entry.get("change")?;
    let actions: Vec<&str> = change
        .get("actions")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if actions.is_empty() || actions == ["no-op"] {
        return None;
    }
    let before = change.get("before").unwrap_or(&Value::Null);
    let after = change.get("after").unwrap_or(&Value::Null);
    let mut attributes = vec![];
    if before.is_object() && after.is_object() {
        let sensitive = Sensitive {
            before: change.get("before_sensitive").unwrap_or(&Value::Null),
            after: change.get("after_sensitive").unwrap_or(&Value::Null),
        };
        changed_paths(before, after, sensitive, "", &mut attributes);
    }
    Some(DriftedResource {
        address,
        action: actions.join("-"),
        attributes,
    })
}

/// The sensitivity trees of a change (`before_sensitive`, `after_sensitive`): `true` at a
/// path marks the value there sensitive, objects mirror the values' nesting.
#[derive(Clone, Copy)]
struct Sensitive<'a> {
    before: &'a Value,
    after: &'a Value,
}

impl<'a> Sensitive<'a> {
    fn here(&self) -> bool {
        self.before == &Value::Bool(true) || self.after == &Value::Bool(true)
    }

    fn child(&self, key: &str) -> Sensitive<'a> {
        Sensitive {
            before: self.before.get(key).unwrap_or(&Value::Null),
            after: self.after.get(key).unwrap_or(&Value::Null),
        }
    }
}

/// Pushes the path of every value that differs between `before` and `after`: nested
/// objects (blocks with attributes, maps) by their keys joined with `.`; a list, or a
/// sensitive value, as a whole, so neither an index nor anything inside a secret shows.
fn changed_paths(
    before: &Value,
    after: &Value,
    sensitive: Sensitive<'_>,
    path: &str,
    out: &mut Vec<String>,
) {
    if before == after {
        return;
    }
    match (before, after) {
        (Value::Object(b), Value::Object(a)) if !sensitive.here() => {
            let mut keys: Vec<&String> = b.keys().chain(a.keys()).collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                let child = match path {
                    "" => key.clone(),
                    _ => format!("{path}.{key}"),
                };
                changed_paths(
                    b.get(key.as_str()).unwrap_or(&Value::Null),
                    a.get(key.as_str()).unwrap_or(&Value::Null),
                    sensitive.child(key),
                    &child,
                    out,
                );
            }
        }
        _ if !path.is_empty() => out.push(path.to_owned()),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> Value {
        let path = format!("{}/testdata/{name}", env!("CARGO_MANIFEST_DIR"));
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    /// A plan written by Terraform 1.0.3 here (`plan -refresh-only -out`, then
    /// `show -json`) for a configuration without resources whose output moved: no
    /// `resource_drift` at all, so no drift, whatever the output changes.
    #[test]
    fn a_real_plan_without_drifted_resources_has_no_drift() {
        let plan = fixture("plan-no-drift-terraform-1.0.3.json");
        assert_eq!(plan["terraform_version"], "1.0.3");
        assert!(plan["output_changes"]["vm_ip"].is_object());
        assert_eq!(from_plan(&plan), vec![]);
    }

    /// The documented shape of `resource_drift` (Terraform's JSON output format; the same
    /// shape as Terraform's own `show-json/drift` test output): written by hand, since no
    /// provider plugin with managed resources can run on this machine to drift for real.
    #[test]
    fn drifted_resources_are_read_with_the_names_of_their_changed_attributes() {
        let plan = fixture("plan-drift-documented-shape.json");

        let drift = from_plan(&plan);

        assert_eq!(
            drift,
            vec![
                DriftedResource {
                    address: "openstack_compute_instance_v2.vm".into(),
                    action: "update".into(),
                    attributes: vec![
                        "admin_pass".into(),
                        "flavor_name".into(),
                        "metadata.owner".into(),
                        "network".into(),
                    ],
                },
                DriftedResource {
                    address:
                        "module.net.openstack_networking_secgroup_rule_v2.ssh[\"192.0.2.0/24\"]"
                            .into(),
                    action: "delete".into(),
                    attributes: vec![],
                },
            ]
        );
        // Names only: no value of the document, secret or not, is in what is reported.
        let reported = serde_json::to_string(&drift).unwrap();
        for value in [
            "hunter2",
            "changed-by-someone-else",
            "m1.large",
            "bob",
            "10.77.3",
        ] {
            assert!(!reported.contains(value), "{value} in {reported}");
        }
    }

    #[test]
    fn a_sensitive_block_is_named_whole_never_its_inner_keys() {
        let plan = serde_json::json!({"resource_drift": [{
            "address": "x.y",
            "change": {
                "actions": ["update"],
                "before": {"credentials": {"token-for-alice": "a"}, "n": 1},
                "after": {"credentials": {"token-for-bob": "b"}, "n": 1},
                "before_sensitive": {"credentials": true},
                "after_sensitive": {"credentials": true}
            }
        }]});
        assert_eq!(from_plan(&plan)[0].attributes, ["credentials"]);
    }

    #[test]
    fn a_document_that_is_not_a_plan_has_no_drift() {
        for plan in [
            serde_json::json!({}),
            serde_json::json!({"resource_drift": "x"}),
            serde_json::json!({"resource_drift": [{"change": {}}, 7]}),
        ] {
            assert_eq!(from_plan(&plan), vec![], "{plan}");
        }
    }
}
