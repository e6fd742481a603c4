//! Turns what Terraform prints into log lines.

use domain::provisioning::{Diagnostic, Severity};

/// The longest message kept from one line; NATS messages have a size limit.
const MAX_MESSAGE: usize = 16 * 1024;

#[derive(Debug, PartialEq)]
pub struct ParsedLine {
    pub level: String,
    /// The `type` of a `-json` message, `plain` for other stdout lines, `stderr` for stderr.
    pub kind: String,
    pub message: String,
    pub diagnostic: Option<Diagnostic>,
    /// Values of sensitive outputs found in an `outputs` message (older Terraform prints
    /// them), to be redacted from everything published after.
    pub sensitive_values: Vec<String>,
}

/// Parses one line. `-json` lines give their `@level`, `type` and `@message`; anything else
/// (init output, stderr, state lock notices) is kept as it is.
pub fn parse_line(text: &str, from_stderr: bool) -> ParsedLine {
    let json = serde_json::from_str::<serde_json::Value>(text)
        .ok()
        .filter(|v| v.get("@message").is_some());
    let Some(json) = json else {
        let level = if from_stderr || text.starts_with("Error: ") {
            "error"
        } else {
            "info"
        };
        return ParsedLine {
            level: level.to_owned(),
            kind: if from_stderr { "stderr" } else { "plain" }.to_owned(),
            message: text.trim_end().to_owned(),
            diagnostic: None,
            sensitive_values: vec![],
        };
    };
    let field = |name: &str| json.get(name).and_then(|v| v.as_str()).unwrap_or_default();
    let diagnostic = json.get("diagnostic").map(|d| {
        let text = |name: &str| d.get(name).and_then(|v| v.as_str()).unwrap_or_default();
        Diagnostic {
            severity: Severity::from_terraform(text("severity")),
            summary: text("summary").to_owned(),
            detail: text("detail").to_owned(),
        }
    });
    let sensitive_values = json
        .get("outputs")
        .and_then(|o| o.as_object())
        .into_iter()
        .flatten()
        .filter(|(_, o)| o.get("sensitive").and_then(|s| s.as_bool()) == Some(true))
        .filter_map(|(_, o)| o.get("value"))
        .map(|v| match v {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect();
    ParsedLine {
        level: field("@level").to_owned(),
        kind: field("type").to_owned(),
        message: field("@message").to_owned(),
        diagnostic,
        sensitive_values,
    }
}

/// Cuts a message to the size a NATS message can carry. Redact first: a secret cut in half
/// would no longer match.
pub(crate) fn truncate(text: &str) -> String {
    if text.len() <= MAX_MESSAGE {
        return text.to_owned();
    }
    let mut end = MAX_MESSAGE;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_lines_give_their_level_type_and_message() {
        let line = r#"{"@level":"info","@message":"Apply complete! Resources: 0 added, 0 changed, 0 destroyed.","@module":"terraform.ui","type":"change_summary","changes":{"add":0,"change":0,"remove":0,"operation":"apply"}}"#;
        let parsed = parse_line(line, false);
        assert_eq!(parsed.level, "info");
        assert_eq!(parsed.kind, "change_summary");
        assert!(parsed.message.starts_with("Apply complete!"));
        assert_eq!(parsed.diagnostic, None);
    }

    #[test]
    fn diagnostics_are_kept_with_their_severity_summary_and_detail() {
        let line = r#"{"@level":"error","@message":"Error: Invalid value for variable","type":"diagnostic","diagnostic":{"severity":"error","summary":"Invalid value for variable","detail":"The flavor_name must be one of local.small."}}"#;
        let parsed = parse_line(line, false);
        assert_eq!(parsed.level, "error");
        let d = parsed.diagnostic.unwrap();
        assert_eq!(d.severity, Severity::Error);
        assert_eq!(d.summary, "Invalid value for variable");
        assert_eq!(d.detail, "The flavor_name must be one of local.small.");
    }

    #[test]
    fn sensitive_output_values_are_noticed() {
        let line = r#"{"@level":"info","@message":"Outputs: 2","type":"outputs","outputs":{"password":{"sensitive":true,"type":"string","value":"hunter2"},"vm_ip":{"sensitive":false,"type":"string","value":"10.0.0.1"}}}"#;
        assert_eq!(parse_line(line, false).sensitive_values, ["hunter2"]);
    }

    #[test]
    fn other_lines_are_kept_as_plain_messages() {
        let parsed = parse_line("Initializing the backend...\n", false);
        assert_eq!(
            (
                parsed.level.as_str(),
                parsed.kind.as_str(),
                parsed.message.as_str()
            ),
            ("info", "plain", "Initializing the backend...")
        );
        assert_eq!(parse_line("{\"not\":\"terraform\"}", true).kind, "stderr");
        assert_eq!(
            parse_line("Error: Failed to get existing workspaces", false).level,
            "error"
        );
    }

    #[test]
    fn very_long_messages_are_cut() {
        let cut = truncate(&"é".repeat(20_000));
        assert!(cut.len() <= MAX_MESSAGE + '…'.len_utf8());
    }
}
