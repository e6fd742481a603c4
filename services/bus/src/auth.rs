//! How a client proves who it is to NATS besides a URL's `user:password@`: runner Jobs
//! connect as their own NATS user, whose password or credentials file comes from a
//! Kubernetes Secret, so that the daemon's URL and its credentials stay with the daemon.

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

impl Bus {
    /// Like [`Bus::connect`], proving who this client is with `auth`.
    pub async fn connect_as(
        url: &str,
        prefix: &str,
        auth: &NatsAuth,
    ) -> Result<Self, async_nats::ConnectError> {
        let options = options(auth).await?;
        let client = options
            .name("provisioning")
            .retry_on_initial_connect()
            .connect(server_urls(url))
            .await?;
        Ok(Self::new(client, prefix))
    }

    /// A second connection for the API's live streams: each subscription holds at most
    /// `capacity` messages, and a slow stream loses the rest (it fills the gap from
    /// Postgres) instead of growing without bound or holding up the JetStream consumers of
    /// the main connection.
    pub async fn connect_for_streams(
        url: &str,
        auth: &NatsAuth,
        capacity: usize,
    ) -> Result<async_nats::Client, async_nats::ConnectError> {
        let options = options(auth).await?;
        options
            .name("provisioning-streams")
            .subscription_capacity(capacity)
            .retry_on_initial_connect()
            .connect(server_urls(url))
            .await
    }
}

/// Connection options proving who the client is with `auth`.
async fn options(auth: &NatsAuth) -> Result<async_nats::ConnectOptions, async_nats::ConnectError> {
    let options = async_nats::ConnectOptions::new();
    Ok(match auth {
        NatsAuth::Url => options,
        NatsAuth::UserPassword { user, password } => {
            options.user_and_password(user.clone(), password.expose_secret().to_owned())
        }
        NatsAuth::CredentialsFile(path) => options.credentials_file(path).await.map_err(|e| {
            async_nats::ConnectError::with_source(async_nats::ConnectErrorKind::Io, e)
        })?,
    })
}

#[cfg(test)]
mod tests {
    use super::without_credentials;

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
