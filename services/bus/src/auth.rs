//! How a client proves who it is to NATS: a URL's `user:password@` (which the client does
//! not read by itself), or, for runners, their own NATS user, whose password or credentials
//! file comes from a Kubernetes Secret or the dispatcher, so that the daemon's URL and its
//! credentials stay with the daemon.

use std::path::PathBuf;

use secrecy::{ExposeSecret, SecretString};

use crate::{server_urls, Bus};

/// The credentials of a NATS connection, apart from any in the URL.
#[derive(Debug, Clone, Default)]
pub enum NatsAuth {
    /// Whatever the URL holds (a `user:password@`), or nothing.
    #[default]
    Url,
    /// A NATS user and its password.
    UserPassword {
        user: String,
        password: SecretString,
    },
    /// A NATS credentials file (a user JWT and its nkey seed).
    CredentialsFile(PathBuf),
}

/// `url` (one server or a comma-separated list) with any `user:password@` removed from each
/// server: what a runner may be told without being given the daemon's NATS identity.
pub fn without_credentials(url: &str) -> String {
    server_urls(url)
        .into_iter()
        .map(|server| {
            let (scheme, rest) = match server.split_once("://") {
                Some((scheme, rest)) => (Some(scheme), rest),
                None => (None, server),
            };
            let authority_end = rest.find('/').unwrap_or(rest.len());
            let rest = match rest[..authority_end].rfind('@') {
                Some(at) => &rest[at + 1..],
                None => rest,
            };
            match scheme {
                Some(scheme) => format!("{scheme}://{rest}"),
                None => rest.to_owned(),
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// Where runners get their replies (JetStream acks, `job_active` answers): an inbox prefix
/// of their own, so that the runners' NATS user may subscribe to it and to nothing the
/// daemon receives on `_INBOX` (its pull consumers' messages among them).
pub const RUNNER_INBOX_PREFIX: &str = "_INBOX_runner";

/// The `user:password@` (or `token@`) of the first server of `url` that names one,
/// percent-decoded.
fn url_credentials(url: &str) -> Option<(String, Option<String>)> {
    let decode = |s: &str| {
        percent_encoding::percent_decode_str(s)
            .decode_utf8_lossy()
            .into_owned()
    };
    server_urls(url).into_iter().find_map(|server| {
        let address: async_nats::ServerAddr = server.parse().ok()?;
        let user = address.username()?;
        Some((decode(user), address.password().map(decode)))
    })
}

impl Bus {
    /// Like [`Bus::connect`], proving who this client is with `auth`.
    pub async fn connect_as(
        url: &str,
        prefix: &str,
        auth: &NatsAuth,
    ) -> Result<Self, async_nats::ConnectError> {
        Self::connect_with(url, prefix, auth, async_nats::ConnectOptions::new()).await
    }

    /// Like [`Bus::connect_as`], for a runner: its replies come on [`RUNNER_INBOX_PREFIX`].
    pub async fn connect_runner(
        url: &str,
        prefix: &str,
        auth: &NatsAuth,
    ) -> Result<Self, async_nats::ConnectError> {
        let options = async_nats::ConnectOptions::new().custom_inbox_prefix(RUNNER_INBOX_PREFIX);
        Self::connect_with(url, prefix, auth, options).await
    }

    async fn connect_with(
        url: &str,
        prefix: &str,
        auth: &NatsAuth,
        options: async_nats::ConnectOptions,
    ) -> Result<Self, async_nats::ConnectError> {
        // The client takes no credentials from a URL: they are passed as options, to
        // servers named without them.
        let options = match auth {
            NatsAuth::Url => match url_credentials(url) {
                Some((user, Some(password))) => options.user_and_password(user, password),
                Some((token, None)) => options.token(token),
                None => options,
            },
            NatsAuth::UserPassword { user, password } => {
                options.user_and_password(user.clone(), password.expose_secret().to_owned())
            }
            NatsAuth::CredentialsFile(path) => {
                options.credentials_file(path).await.map_err(|e| {
                    async_nats::ConnectError::with_source(async_nats::ConnectErrorKind::Io, e)
                })?
            }
        };
        let servers = without_credentials(url);
        let client = options
            .name("provisioning")
            .retry_on_initial_connect()
            .connect(server_urls(&servers))
            .await?;
        Ok(Self::new(client, prefix))
    }

    /// A second connection for the API's live streams: each subscription holds at most
    /// `capacity` messages, and a slow stream loses the rest (it fills the gap from
    /// Postgres) instead of growing without bound or holding up the JetStream consumers of
    /// the main connection. `on_drop` is called when NATS drops a message for a full
    /// subscription (at most once per message; the client may coalesce its notices).
    pub async fn connect_for_streams(
        url: &str,
        auth: &NatsAuth,
        capacity: usize,
        on_drop: impl Fn() + Send + Sync + 'static,
    ) -> Result<async_nats::Client, async_nats::ConnectError> {
        let on_drop = std::sync::Arc::new(on_drop);
        let options = async_nats::ConnectOptions::new()
            .subscription_capacity(capacity)
            .event_callback(move |event| {
                let on_drop = on_drop.clone();
                async move {
                    if matches!(event, async_nats::Event::SlowConsumer(_)) {
                        on_drop();
                    }
                }
            });
        Ok(Self::connect_with(url, "", auth, options).await?.client)
    }
}

#[cfg(test)]
mod tests {
    use super::{url_credentials, without_credentials};

    #[test]
    fn the_credentials_of_a_url_are_taken_from_its_first_server_that_names_them() {
        assert_eq!(
            url_credentials("nats://n1:4222,nats://provisioningd:p%40ss@n2:4222"),
            Some(("provisioningd".into(), Some("p@ss".into())))
        );
        assert_eq!(
            url_credentials("tls://s3cret@n1:4222"),
            Some(("s3cret".into(), None))
        );
        assert_eq!(url_credentials("nats://127.0.0.1:4222"), None);
    }

    #[test]
    fn credentials_are_stripped_from_every_server_of_a_url() {
        assert_eq!(
            without_credentials("nats://provisioningd:p%40ss@nats.provisioning.svc:4222"),
            "nats://nats.provisioning.svc:4222"
        );
        assert_eq!(
            without_credentials("nats://a:b@n1:4222, tls://token@n2:4222,n3:4222"),
            "nats://n1:4222,tls://n2:4222,n3:4222"
        );
        assert_eq!(
            without_credentials("nats://127.0.0.1:4222"),
            "nats://127.0.0.1:4222"
        );
    }
}
