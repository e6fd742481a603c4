//! A job's Terraform output as the VM page shows it before any script runs: the lines of
//! its latest job, each with classes for its level and its colour (ANSI escapes taken out
//! and mapped to a class, as the page's script does for the lines that arrive live), and
//! the failing diagnostic marked.

use domain::provisioning::VmId;

use crate::ApiError;

/// How many lines of the latest job the page shows; the rest are in the API's logs.
const LINES_SHOWN: i64 = 1000;

/// One line of output.
pub(crate) struct LogShown {
    /// `log-<level>`, `ansi-<colour>` of the line's first colour, `diagnostic` for an error
    /// diagnostic (the one that made the job fail).
    pub class: String,
    pub text: String,
    /// The job and the line's number in it: the script adds only the lines after it.
    pub job: i32,
    pub line: i32,
}

/// The lines of the VM's latest job that printed any, oldest first.
pub(crate) async fn latest_job_lines(
    pool: &store::PgPool,
    vm: VmId,
    jobs: &[u32],
) -> Result<Vec<LogShown>, ApiError> {
    for job in jobs.iter().rev() {
        let rows = store::views::job_logs(pool, vm, *job as i32, 0, LINES_SHOWN).await?;
        if !rows.is_empty() {
            return Ok(rows
                .iter()
                .map(|r| LogShown {
                    job: r.job_id,
                    line: r.line,
                    ..shown(&r.level, &r.kind, &r.message)
                })
                .collect());
        }
    }
    Ok(Vec::new())
}

/// A line as shown: its text without escapes, and its classes.
pub(crate) fn shown(level: &str, kind: &str, message: &str) -> LogShown {
    let (text, colour) = without_escapes(message);
    let level: String = level
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .take(16)
        .collect();
    let mut class = format!("log-{level}");
    if let Some(colour) = colour {
        class.push_str(&format!(" ansi-{colour}"));
    }
    if kind == "diagnostic" && level == "error" {
        class.push_str(" diagnostic");
    }
    LogShown {
        class,
        text,
        job: 0,
        line: 0,
    }
}

/// `message` without its ANSI escape sequences, and the first foreground colour (30-37,
/// 90-97) they set, if any.
fn without_escapes(message: &str) -> (String, Option<u8>) {
    let mut text = String::with_capacity(message.len());
    let mut colour = None;
    let mut chars = message.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            text.push(c);
            continue;
        }
        if chars.peek() != Some(&'[') {
            continue;
        }
        chars.next();
        let mut params = String::new();
        for p in chars.by_ref() {
            if p.is_ascii_alphabetic() {
                if p == 'm' && colour.is_none() {
                    colour = params
                        .split(';')
                        .filter_map(|n| n.parse::<u8>().ok())
                        .find(|n| (30..=37).contains(n) || (90..=97).contains(n));
                }
                break;
            }
            params.push(p);
        }
    }
    (text, colour)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_are_taken_out_and_their_colour_kept_as_a_class() {
        let line = shown(
            "error",
            "diagnostic",
            "\u{1b}[1;31mError:\u{1b}[0m no such image",
        );
        assert_eq!(line.text, "Error: no such image");
        assert_eq!(line.class, "log-error ansi-31 diagnostic");
        let plain = shown("info", "apply_start", "aws_instance.vm: Creating...");
        assert_eq!(plain.class, "log-info");
        assert_eq!(plain.text, "aws_instance.vm: Creating...");
    }
}
