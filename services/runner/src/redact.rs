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

    pub fn add(&mut self, secret: String) {
        if !secret.is_empty() && !self.secrets.contains(&secret) {
            self.secrets.push(secret);
            // Longest first, so a secret containing another is replaced whole.
            self.secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        }
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
}
