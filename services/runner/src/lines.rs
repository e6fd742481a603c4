//! Turns what Terraform prints into log lines.

use domain::provisioning::{Diagnostic, Severity};
use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// The longest message kept from one line; NATS messages have a size limit.
const MAX_MESSAGE: usize = 16 * 1024;

/// The most bytes kept of one line as read (a `-json` line keeps its structure up to this
/// size); the rest of a longer line is still read, and skipped.
const MAX_LINE: usize = 256 * 1024;

/// Reads one line of Terraform's output as bytes, without its newline, keeping at most
/// [`MAX_LINE`] bytes of it. `None` at the end of the output. Any bytes are accepted:
/// stopping at a line that is not UTF-8 would close the pipe, and Terraform's next write
/// would kill it with SIGPIPE in the middle of an apply.
pub(crate) async fn read_line(
    reader: &mut (impl AsyncBufRead + Unpin),
    buf: &mut Vec<u8>,
) -> std::io::Result<Option<String>> {
    buf.clear();
    let mut skipped = 0;
    let mut read_any = false;
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(read_any.then(|| decode(buf, skipped)));
        }
        read_any = true;
        let newline = available.iter().position(|&b| b == b'\n');
        let chunk = &available[..newline.unwrap_or(available.len())];
        let keep = chunk.len().min(MAX_LINE.saturating_sub(buf.len()));
        buf.extend_from_slice(&chunk[..keep]);
        skipped += chunk.len() - keep;
        let used = newline.map_or(available.len(), |i| i + 1);
        reader.consume(used);
        if newline.is_some() {
            return Ok(Some(decode(buf, skipped)));
        }
    }
}

/// The text of a line read as bytes: invalid UTF-8 replaced by U+FFFD, a cut line marked.
fn decode(bytes: &[u8], skipped: usize) -> String {
    let mut text = String::from_utf8_lossy(bytes).into_owned();
    if skipped > 0 {
        text.push_str(&format!("… [line cut: {} bytes]", bytes.len() + skipped));
    }
    text
}

/// Text Postgres can store in `jsonb`: a NUL character (which `jsonb` refuses, also as
/// `\u0000`, so one would stop the job's events for ever) is written as the two characters
/// `\0`. Terraform's `-json` lines can carry one escaped, so this applies to parsed text.
pub(crate) fn clean(text: &str) -> String {
    text.replace('\0', "\\0")
}

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
    format!("{}… [message cut at {MAX_MESSAGE} bytes]", &text[..end])
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
    fn very_long_messages_are_cut_with_a_marker() {
        let cut = truncate(&"é".repeat(20_000));
        assert!(cut.len() <= MAX_MESSAGE + 64);
        assert!(cut.ends_with("… [message cut at 16384 bytes]"), "{cut}");
    }

    async fn read_all(bytes: &[u8]) -> Vec<String> {
        // A small buffer, so lines span several reads.
        let mut reader = tokio::io::BufReader::with_capacity(7, bytes);
        let (mut buf, mut lines) = (vec![], vec![]);
        while let Some(line) = read_line(&mut reader, &mut buf).await.unwrap() {
            lines.push(line);
        }
        lines
    }

    #[tokio::test]
    async fn invalid_utf8_is_replaced_and_reading_goes_on() {
        let lines = read_all(b"caf\xe9 ok\n\xff\xfe\nnext line\nlast without newline").await;
        assert_eq!(
            lines,
            [
                "caf\u{FFFD} ok",
                "\u{FFFD}\u{FFFD}",
                "next line",
                "last without newline"
            ]
        );
    }

    #[tokio::test]
    async fn an_overlong_line_is_cut_with_a_marker_and_the_next_line_is_read() {
        let mut input = vec![b'x'; MAX_LINE + 1000];
        input.extend_from_slice(b"\nafter\n");
        let lines = read_all(&input).await;
        assert_eq!(lines.len(), 2);
        let marker = format!("… [line cut: {} bytes]", MAX_LINE + 1000);
        assert!(lines[0].ends_with(&marker));
        assert_eq!(lines[0].len(), MAX_LINE + marker.len());
        assert_eq!(lines[1], "after");
    }

    #[test]
    fn nul_characters_are_escaped_also_when_json_encoded() {
        assert_eq!(clean("a\0b"), "a\\0b");
        let parsed = parse_line(
            r#"{"@level":"info","@message":"a\u0000b","type":"log"}"#,
            false,
        );
        assert_eq!(clean(&parsed.message), "a\\0b");
        assert!(!clean(&parsed.message).contains('\0'));
    }
}
