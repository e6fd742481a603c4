//! Keeps credential values and sensitive outputs out of everything the runner publishes.

/// What a redacted value is replaced with.
pub const REDACTED: &str = "[redacted]";

#[derive(Debug, Default)]
pub struct Redactor {
    secrets: Vec<String>,
}

impl Redactor {
    pub fn new(secrets: impl IntoIterator<Item = String>) -> Self {
        let mut redactor = Self::default();
        for secret in secrets {
            redactor.add(secret);
        }
        redactor
    }

    /// Adds a secret, with the forms it may take in output: JSON-escaped, and, for a
    /// multi-line secret (a key file), each of its lines, since output is read line by line.
    pub fn add(&mut self, secret: String) {
        let escaped = serde_json::Value::String(secret.clone()).to_string();
        let escaped = escaped[1..escaped.len() - 1].to_owned();
        let lines: Vec<String> = secret
            .lines()
            .map(str::trim)
            .filter(|l| l.len() >= 8)
            .map(str::to_owned)
            .collect();
        for form in std::iter::once(secret)
            .chain(std::iter::once(escaped))
            .chain(lines)
        {
            if !form.is_empty() && !self.secrets.contains(&form) {
                self.secrets.push(form);
            }
        }
        // Longest first, so a secret containing another is replaced whole.
        self.secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    }

    pub fn apply(&self, text: &str) -> String {
        let mut text = text.to_owned();
        for secret in &self.secrets {
            if text.contains(secret.as_str()) {
                text = text.replace(secret.as_str(), REDACTED);
            }
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_secret_is_replaced_wherever_it_appears() {
        let redactor =
            Redactor::new(["s3cr3t".to_owned(), "s3cr3t-long".to_owned(), String::new()]);
        assert_eq!(
            redactor.apply("token s3cr3t-long and s3cr3t, again s3cr3t"),
            "token [redacted] and [redacted], again [redacted]"
        );
        assert_eq!(redactor.apply("nothing here"), "nothing here");
    }

    #[test]
    fn multi_line_and_json_escaped_secrets_are_replaced_too() {
        let key = "{\n  \"private_key\": \"-----BEGIN KEY-----abcdefgh\"\n}".to_owned();
        let redactor = Redactor::new([key]);
        let line = r#"  "private_key": "-----BEGIN KEY-----abcdefgh""#;
        assert_eq!(redactor.apply(line), "  [redacted]");
        let escaped = r#"error: {\n  \"private_key\": \"-----BEGIN KEY-----abcdefgh\"\n}"#;
        assert_eq!(redactor.apply(escaped), "error: [redacted]");
    }
}
