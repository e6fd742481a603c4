//! The params of the create form's taskservs: each taskserv's params (name, type, default
//! and description from its definition) as inputs beside its checkbox, named
//! `params.<taskserv>.<param>`; read back into the request's `taskservs: [{name, params}]`;
//! and the use case's refusal of one shown beside it.

use std::collections::BTreeMap;

use domain::taskservs::{Params, TaskservName, TaskservRequest};
use serde_json::Value;

use super::form::Fields;

/// What was typed in the params' inputs, by `<taskserv>.<param>`.
pub(crate) type Typed = BTreeMap<String, String>;

/// One param's input.
pub(crate) struct ParamInput {
    /// The input's id: `param-<taskserv>-<param>`.
    pub id: String,
    /// The input's name: `params.<taskserv>.<param>`.
    pub field: String,
    pub name: String,
    /// `string`, `number` or `bool`.
    pub kind: String,
    pub default: String,
    pub description: String,
    pub value: String,
    pub error: Option<String>,
}

/// A taskserv of the form: its checkbox and its params.
pub(crate) struct TaskservChoice {
    pub name: String,
    pub description: String,
    pub params: Vec<ParamInput>,
    /// The refusal that names it and none of its params.
    pub error: Option<String>,
}

impl TaskservChoice {
    /// Whether a refusal is shown beside it or one of its params.
    pub fn has_error(&self) -> bool {
        self.error.is_some() || self.params.iter().any(|p| p.error.is_some())
    }
}

/// The params typed in the form.
pub(crate) fn typed(fields: &Fields) -> Typed {
    fields
        .prefixed("params.")
        .map(|(key, value)| (key.to_owned(), value.to_owned()))
        .collect()
}

/// A param's value as a page writes it.
fn written(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The form's taskservs, each param holding what was typed (else its default).
pub(crate) fn choices(
    listing: &[app::taskservs::TaskservListing],
    typed: &Typed,
) -> Vec<TaskservChoice> {
    listing
        .iter()
        .map(|t| {
            let name = t.definition.name.as_str();
            let params = t
                .definition
                .params
                .iter()
                .map(|(param, spec)| {
                    let default = spec.default.as_ref().map(written).unwrap_or_default();
                    let key = format!("{name}.{param}");
                    ParamInput {
                        id: format!("param-{name}-{param}"),
                        field: format!("params.{key}"),
                        name: param.clone(),
                        kind: serde_json::to_value(spec.kind)
                            .ok()
                            .as_ref()
                            .map(written)
                            .unwrap_or_default(),
                        value: typed.get(&key).cloned().unwrap_or_else(|| default.clone()),
                        default,
                        description: spec.description.clone(),
                        error: None,
                    }
                })
                .collect();
            TaskservChoice {
                name: name.to_owned(),
                description: t.definition.description.clone(),
                params,
                error: None,
            }
        })
        .collect()
}

/// The requests of the taskservs `checked`, with the params typed for them. A blank input
/// leaves its param to its default; a value of the wrong type is sent as typed, for the use
/// case to refuse.
pub(crate) fn requests(
    checked: &[String],
    typed: &Typed,
    listing: &[app::taskservs::TaskservListing],
) -> Result<Vec<TaskservRequest>, app::Error> {
    checked
        .iter()
        .map(|name| {
            let def = listing.iter().find(|t| t.definition.name.as_str() == name);
            let mut params = Params::new();
            for (param, spec) in def.map(|t| &t.definition.params).into_iter().flatten() {
                let Some(raw) = typed.get(&format!("{name}.{param}")) else {
                    continue;
                };
                if raw.is_empty() {
                    continue;
                }
                let kind = serde_json::to_value(spec.kind).unwrap_or_default();
                params.insert(param.clone(), value_of(kind.as_str().unwrap_or(""), raw));
            }
            Ok(TaskservRequest {
                name: TaskservName::parse(name)?,
                params,
            })
        })
        .collect()
}

fn value_of(kind: &str, raw: &str) -> Value {
    let number = || {
        raw.parse::<i64>().map(Value::from).ok().or_else(|| {
            raw.parse::<f64>()
                .ok()
                .and_then(|f| serde_json::Number::from_f64(f).map(Value::Number))
        })
    };
    let parsed = match kind {
        "number" => number(),
        "bool" => raw.parse::<bool>().ok().map(Value::Bool),
        _ => None,
    };
    parsed.unwrap_or_else(|| Value::String(raw.to_owned()))
}

/// Puts the refusal `detail` of the request's taskservs beside what it names: a refusal
/// reads `taskservs: <taskserv>: <why>` (docs/taskservs.md), and names a param as
/// `param <name>`. Whether it found a place.
pub(crate) fn place(choices: &mut [TaskservChoice], detail: &str) -> bool {
    let Some((taskserv, why)) = detail
        .strip_prefix("taskservs: ")
        .and_then(|rest| rest.split_once(": "))
    else {
        return false;
    };
    let Some(choice) = choices.iter_mut().find(|c| c.name == taskserv) else {
        return false;
    };
    let names = |p: &str| {
        why.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .collect::<Vec<_>>()
            .windows(2)
            .any(|w| w[0] == "param" && w[1] == p)
    };
    match choice.params.iter_mut().find(|p| names(&p.name)) {
        Some(param) => param.error = Some(detail.to_owned()),
        None => choice.error = Some(detail.to_owned()),
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_is_sent_with_its_type_or_as_typed() {
        assert_eq!(value_of("number", "3001"), Value::from(3001));
        assert_eq!(value_of("number", "1.5"), serde_json::json!(1.5));
        assert_eq!(value_of("number", "x"), Value::from("x"));
        assert_eq!(value_of("bool", "true"), Value::Bool(true));
        assert_eq!(value_of("string", "42"), Value::from("42"));
    }

    fn choice(name: &str, params: &[&str]) -> TaskservChoice {
        TaskservChoice {
            name: name.into(),
            description: String::new(),
            params: params
                .iter()
                .map(|p| ParamInput {
                    id: String::new(),
                    field: String::new(),
                    name: (*p).into(),
                    kind: "number".into(),
                    default: String::new(),
                    description: String::new(),
                    value: String::new(),
                    error: None,
                })
                .collect(),
            error: None,
        }
    }

    #[test]
    fn a_refusal_goes_beside_the_param_it_names_else_its_taskserv() {
        let mut choices = [
            choice("grafana", &["port", "grafana_version"]),
            choice("redis", &["port"]),
        ];
        let detail = "taskservs: grafana: param port must be a number, not \"x\"";
        assert!(place(&mut choices, detail));
        assert_eq!(choices[0].params[0].error.as_deref(), Some(detail));
        assert!(choices[0].params[1].error.is_none() && choices[1].params[0].error.is_none());
        assert!(place(&mut choices, "taskservs: redis: needs 1 GB more RAM"));
        assert!(choices[1].error.is_some());
        assert!(!place(&mut choices, "taskservs: k3s and nginx conflict"));
    }
}
