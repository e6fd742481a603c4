//! Rendering a role's params for one node: each `{{ roles.<role>[<i>].outputs.<key> }}` is
//! replaced by what that node's taskservs reported. A param that is one reference and
//! nothing else takes the output's value as a number or a bool when it reads as one.

use std::collections::BTreeMap;

use domain::taskservs::{Params, TaskservRequest};

/// The outputs of one node, by role and index: every key its taskservs reported.
pub type Outputs = BTreeMap<(String, u32), BTreeMap<String, String>>;

/// `requests` with every reference rendered from `outputs`; the error names the param and
/// the output missing.
pub fn render(
    requests: &[TaskservRequest],
    outputs: &Outputs,
) -> Result<Vec<TaskservRequest>, String> {
    requests
        .iter()
        .map(|request| {
            let mut params = Params::new();
            for (name, value) in &request.params {
                let rendered = match value {
                    serde_json::Value::String(text) => render_text(text, outputs)
                        .map_err(|e| format!("{} param {name}: {e}", request.name))?,
                    other => other.clone(),
                };
                params.insert(name.clone(), rendered);
            }
            Ok(TaskservRequest {
                name: request.name.clone(),
                params,
            })
        })
        .collect()
}

fn render_text(text: &str, outputs: &Outputs) -> Result<serde_json::Value, String> {
    let references = ::clusters::references_in(text)?;
    if references.is_empty() {
        return Ok(serde_json::Value::String(text.to_owned()));
    }
    let value_of = |r: &::clusters::Reference| {
        outputs
            .get(&(r.role.clone(), r.index))
            .and_then(|o| o.get(&r.key))
            .cloned()
            .ok_or_else(|| {
                format!(
                    "node {}[{}] has reported no output {:?}",
                    r.role, r.index, r.key
                )
            })
    };
    if references.len() == 1 && is_whole(text) {
        let value = value_of(&references[0])?;
        // A number or a bool param is written as one reference: keep its type.
        return Ok(serde_json::from_str::<serde_json::Value>(&value)
            .ok()
            .filter(|v| v.is_number() || v.is_boolean())
            .unwrap_or(serde_json::Value::String(value)));
    }
    let mut rendered = String::new();
    let mut rest = text;
    for reference in &references {
        let start = rest.find("{{").unwrap_or(rest.len());
        let end = rest[start..]
            .find("}}")
            .map_or(rest.len(), |e| start + e + 2);
        rendered.push_str(&rest[..start]);
        rendered.push_str(&value_of(reference)?);
        rest = &rest[end..];
    }
    rendered.push_str(rest);
    Ok(serde_json::Value::String(rendered))
}

fn is_whole(text: &str) -> bool {
    let t = text.trim();
    t.starts_with("{{") && t.ends_with("}}") && t.matches("{{").count() == 1
}

#[cfg(test)]
mod tests {
    use super::*;
    use domain::taskservs::TaskservName;

    fn k3s(params: serde_json::Value) -> TaskservRequest {
        TaskservRequest {
            name: TaskservName::parse("k3s").unwrap(),
            params: serde_json::from_value(params).unwrap(),
        }
    }

    fn seed_outputs() -> Outputs {
        BTreeMap::from([(
            ("seed".to_owned(), 0),
            BTreeMap::from([
                ("server_url".to_owned(), "https://10.0.0.5:6443".to_owned()),
                ("port".to_owned(), "6443".to_owned()),
            ]),
        )])
    }

    #[test]
    fn a_reference_takes_the_output_of_the_node_it_names() {
        let asked = [k3s(serde_json::json!({
            "role": "agent",
            "server_url": "{{ roles.seed[0].outputs.server_url }}",
            "note": "joins {{ roles.seed[0].outputs.server_url }} on {{roles.seed[0].outputs.port}}",
            "port": "{{ roles.seed[0].outputs.port }}",
        }))];
        let done = render(&asked, &seed_outputs()).unwrap();
        let params = &done[0].params;
        assert_eq!(params["role"], "agent");
        assert_eq!(params["server_url"], "https://10.0.0.5:6443");
        assert_eq!(params["note"], "joins https://10.0.0.5:6443 on 6443");
        assert_eq!(params["port"], 6443);
    }

    #[test]
    fn an_output_not_reported_is_an_error_naming_the_node_and_key() {
        let asked = [k3s(
            serde_json::json!({"server_url": "{{ roles.seed[1].outputs.server_url }}"}),
        )];
        let error = render(&asked, &seed_outputs()).unwrap_err();
        assert!(
            error.contains("seed[1]") && error.contains("server_url"),
            "{error}"
        );
    }
}
