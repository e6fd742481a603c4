//! What can go wrong, the one line a person reads for it, and the documented exit codes
//! scripts branch on.

use std::process::ExitCode;

/// Every failure of a command. Each maps to one exit code (see [`CliError::exit_code`]).
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// The platform answered 4xx (other than 401) or 5xx with its `{code, detail}`.
    #[error("{detail}")]
    Api {
        status: u16,
        code: String,
        detail: String,
    },
    /// No credentials, or the platform answered 401.
    #[error("{0}")]
    NotSignedIn(String),
    /// The platform could not be reached (or its answer not read) at `url`.
    #[error("could not reach {url}: {cause}")]
    Network { url: String, cause: String },
    /// A job failed while `--wait` followed it.
    #[error("{0}")]
    JobFailed(String),
    /// A mistake in the arguments that clap cannot see (a taskserv's param, a key file).
    #[error("{0}")]
    Usage(String),
    /// Ctrl-C stopped a wait (the message how to follow again is printed already).
    #[error("interrupted")]
    Interrupted,
    /// Anything else this side failed at (the credentials file, an unexpected answer).
    #[error("{0}")]
    Local(String),
}

impl CliError {
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Api { .. } | CliError::Network { .. } | CliError::Local(_) => 1,
            CliError::Usage(_) => 2,
            CliError::JobFailed(_) => 3,
            // As shells report a command ended by SIGINT.
            CliError::Interrupted => 130,
            CliError::NotSignedIn(_) => 4,
        }
    }

    pub fn exit(&self) -> ExitCode {
        ExitCode::from(self.exit_code())
    }

    /// The line printed on stderr: `error: <detail>`, and the API's code and status when
    /// `verbose`.
    pub fn line(&self, verbose: bool) -> String {
        match self {
            CliError::Api {
                status,
                code,
                detail,
            } if verbose => format!("error: {detail} ({code}, HTTP {status})"),
            other => format!("error: {other}"),
        }
    }

    /// A network error, with the cause chain of `error` (reqwest's top line alone says
    /// little: "error sending request").
    pub fn network(url: &str, error: &(dyn std::error::Error + 'static)) -> CliError {
        let mut cause = error.to_string();
        let mut source = error.source();
        while let Some(inner) = source {
            let text = inner.to_string();
            if !cause.contains(&text) {
                cause.push_str(": ");
                cause.push_str(&text);
            }
            source = inner.source();
        }
        CliError::Network {
            url: url.to_owned(),
            cause,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api(status: u16) -> CliError {
        CliError::Api {
            status,
            code: "invalid_field".into(),
            detail: "template: no template \"nope\" on local".into(),
        }
    }

    #[test]
    fn an_api_error_is_one_line_with_its_detail() {
        assert_eq!(
            api(422).line(false),
            "error: template: no template \"nope\" on local"
        );
    }

    #[test]
    fn verbose_adds_the_code_and_status() {
        assert_eq!(
            api(422).line(true),
            "error: template: no template \"nope\" on local (invalid_field, HTTP 422)"
        );
    }

    #[test]
    fn a_network_error_names_the_url_tried() {
        let error = CliError::network(
            "http://127.0.0.1:9/api/v1/me",
            &std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused"),
        );
        assert_eq!(
            error.line(false),
            "error: could not reach http://127.0.0.1:9/api/v1/me: refused"
        );
        assert_eq!(error.exit_code(), 1);
    }

    #[test]
    fn exit_codes_are_the_documented_ones() {
        assert_eq!(api(422).exit_code(), 1);
        assert_eq!(api(500).exit_code(), 1);
        assert_eq!(CliError::Usage("x".into()).exit_code(), 2);
        assert_eq!(CliError::JobFailed("x".into()).exit_code(), 3);
        assert_eq!(CliError::NotSignedIn("x".into()).exit_code(), 4);
    }
}
