//! Size limits applied where events are made. An event is stored in Postgres (jsonb, which
//! refuses NUL) and published whole on NATS (whose `max_payload` is 1 MiB by default), so
//! text from Terraform is cleaned and cut here, with a marker saying so, rather than making
//! an event that the ingester, relay or projector can never handle.

use super::events::{Diagnostic, DriftedResource, Severity};

/// The most bytes kept of a diagnostic's summary or detail, or of a failure's reason.
pub const MAX_TEXT: usize = 4 * 1024;
/// The most bytes kept of a host name a VM reports (DNS allows 253).
pub const MAX_NAME: usize = 255;
/// The most bytes kept of one log line.
pub const MAX_LINE: usize = 8 * 1024;
/// The most diagnostics kept of one job; a last one says how many more were cut.
pub const MAX_DIAGNOSTICS: usize = 32;

/// The most drifted resources kept of one refresh, and attribute names of one resource;
/// a last entry says how many more were cut.
pub const MAX_DRIFTED: usize = 64;

/// `text` without NUL characters (written `\0` instead, since Postgres' jsonb refuses
/// them) and cut to at most `max` bytes, on a character boundary, with a marker if cut.
pub fn clean(text: String, max: usize) -> String {
    let text = if text.contains('\0') {
        text.replace('\0', "\\0")
    } else {
        text
    };
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… [cut: {} more bytes]", &text[..end], text.len() - end)
}

/// At most [`MAX_DIAGNOSTICS`] diagnostics, each cleaned, in Terraform's order; when there
/// are more, the errors are kept first (so the reason of a failure survives the cut) and a
/// last warning says how many were cut.
pub fn clean_diagnostics(diagnostics: Vec<Diagnostic>) -> Vec<Diagnostic> {
    let total = diagnostics.len();
    if total <= MAX_DIAGNOSTICS {
        return diagnostics.into_iter().map(clean_one).collect();
    }
    let (errors, warnings): (Vec<_>, Vec<_>) = diagnostics
        .into_iter()
        .partition(|d| d.severity == Severity::Error);
    let mut kept: Vec<Diagnostic> = errors
        .into_iter()
        .chain(warnings)
        .take(MAX_DIAGNOSTICS)
        .map(clean_one)
        .collect();
    kept.push(Diagnostic {
        severity: Severity::Warning,
        summary: format!("{} more diagnostics were cut", total - MAX_DIAGNOSTICS),
        detail: String::new(),
    });
    kept
}

/// At most [`MAX_DRIFTED`] resources, each with at most [`MAX_DRIFTED`] attribute names,
/// every text cleaned and cut; a last resource (action `cut`), or a last attribute, says
/// how many more there were.
pub fn clean_drift(resources: Vec<DriftedResource>) -> Vec<DriftedResource> {
    let total = resources.len();
    let mut kept: Vec<DriftedResource> = resources
        .into_iter()
        .take(MAX_DRIFTED)
        .map(|r| {
            let more = r.attributes.len().saturating_sub(MAX_DRIFTED);
            let mut attributes: Vec<String> = r
                .attributes
                .into_iter()
                .take(MAX_DRIFTED)
                .map(|a| clean(a, MAX_TEXT))
                .collect();
            if more > 0 {
                attributes.push(format!("({more} more attributes were cut)"));
            }
            DriftedResource {
                address: clean(r.address, MAX_TEXT),
                action: clean(r.action, MAX_TEXT),
                attributes,
            }
        })
        .collect();
    if total > MAX_DRIFTED {
        kept.push(DriftedResource {
            address: format!("({} more resources were cut)", total - MAX_DRIFTED),
            action: "cut".to_owned(),
            attributes: vec![],
        });
    }
    kept
}

fn clean_one(d: Diagnostic) -> Diagnostic {
    Diagnostic {
        severity: d.severity,
        summary: clean(d.summary, MAX_TEXT),
        detail: clean(d.detail, MAX_TEXT),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_text_is_cut_on_a_character_boundary_with_a_marker() {
        let text = "é".repeat(MAX_TEXT);
        let cut = clean(text, MAX_TEXT);
        assert!(cut.len() < MAX_TEXT + 40, "{}", cut.len());
        assert!(cut.ends_with(&format!("… [cut: {} more bytes]", MAX_TEXT)));
    }

    #[test]
    fn nul_characters_are_written_out() {
        assert_eq!(clean("a\u{0}b".into(), 10), "a\\0b");
    }

    #[test]
    fn a_huge_drift_is_cut_with_a_marker_of_how_much() {
        let resource = |n: usize| DriftedResource {
            address: format!("null_resource.r{n}\u{0}"),
            action: "update".into(),
            attributes: (0..MAX_DRIFTED + 3).map(|a| format!("a{a}")).collect(),
        };
        let kept = clean_drift((0..MAX_DRIFTED + 5).map(resource).collect());
        assert_eq!(kept.len(), MAX_DRIFTED + 1);
        assert_eq!(kept[0].address, "null_resource.r0\\0");
        assert_eq!(kept[0].attributes.len(), MAX_DRIFTED + 1);
        assert_eq!(
            kept[0].attributes[MAX_DRIFTED],
            "(3 more attributes were cut)"
        );
        assert_eq!(kept[MAX_DRIFTED].address, "(5 more resources were cut)");
        assert_eq!(kept[MAX_DRIFTED].action, "cut");
    }

    #[test]
    fn too_many_diagnostics_keep_the_errors_and_say_how_many_were_cut() {
        let d = |severity, n: usize| Diagnostic {
            severity,
            summary: n.to_string(),
            detail: "x".repeat(MAX_TEXT * 2),
        };
        let mut all: Vec<_> = (0..MAX_DIAGNOSTICS)
            .map(|n| d(Severity::Warning, n))
            .collect();
        all.push(d(Severity::Error, 99));
        let kept = clean_diagnostics(all);
        assert_eq!(kept.len(), MAX_DIAGNOSTICS + 1);
        assert_eq!(kept[0].summary, "99");
        assert!(kept[0].detail.len() < MAX_TEXT + 40);
        assert_eq!(kept[MAX_DIAGNOSTICS].summary, "1 more diagnostics were cut");
    }
}
