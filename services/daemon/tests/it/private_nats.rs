//! A NATS server of one test's own (`nats-server -js` on a free loopback port, with its own
//! store directory), which the test may stop and start again with the same store. The
//! machine's shared server is never stopped.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

pub struct PrivateNats {
    port: u16,
    store: tempfile::TempDir,
    child: Option<Child>,
    /// Started with the repository's `nats/server.conf`: its users and their permissions.
    users: bool,
    /// The server's `max_payload`, when not its default (1 MiB).
    max_payload: Option<usize>,
}

/// The users of `nats/auth.conf`.
pub const USERS: [&str; 7] = [
    "provisioningd",
    "api",
    "relay",
    "projector",
    "dispatcher",
    "ingester",
    "runner",
];

impl PrivateNats {
    pub async fn start() -> Self {
        Self::start_as(false).await
    }

    /// A server with the repository's configuration (`nats/server.conf`, which includes
    /// `nats/auth.conf`): only its users may connect, each with its permissions.
    pub async fn start_with_users() -> Self {
        Self::start_as(true).await
    }

    /// A server whose messages may carry at most `bytes` (its `max_payload`).
    pub async fn start_with_max_payload(bytes: usize) -> Self {
        Self::start_configured(false, Some(bytes)).await
    }

    /// The password this test gives `user`.
    pub fn password(user: &str) -> String {
        format!("{user}-test-password")
    }

    /// The server's URL with `user`'s credentials.
    pub fn url_as(&self, user: &str) -> String {
        format!(
            "nats://{user}:{}@127.0.0.1:{}",
            Self::password(user),
            self.port
        )
    }

    async fn start_as(users: bool) -> Self {
        Self::start_configured(users, None).await
    }

    async fn start_configured(users: bool, max_payload: Option<usize>) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut nats = Self {
            port,
            store: tempfile::tempdir().unwrap(),
            child: None,
            users,
            max_payload,
        };
        nats.start_again().await;
        nats
    }

    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// Starts the server (again), with the streams and messages it stored, and waits until
    /// it accepts connections.
    pub async fn start_again(&mut self) {
        assert!(self.child.is_none(), "the server is running");
        let mut command = Command::new("nats-server");
        if self.users {
            command
                .arg("-c")
                .arg(concat!(
                    env!("CARGO_MANIFEST_DIR"),
                    "/../../nats/server.conf"
                ))
                .env("NATS_STORE_DIR", self.store.path());
            for user in USERS {
                let variable = format!("NATS_{}_PASSWORD", user.to_uppercase());
                command.env(variable, Self::password(user));
            }
        } else if let Some(bytes) = self.max_payload {
            // `max_payload` has no command-line flag: a configuration file of its own.
            let config = self.store.path().join("max-payload.conf");
            let store = self.store.path().display();
            let text = format!("max_payload: {bytes}\njetstream {{ store_dir: \"{store}\" }}\n");
            std::fs::write(&config, text).unwrap();
            command.arg("-c").arg(config);
        } else {
            command.arg("-js").arg("-sd").arg(self.store.path());
        }
        let child = command
            .args(["-a", "127.0.0.1", "-p"])
            .arg(self.port.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("nats-server runs");
        self.child = Some(child);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while tokio::net::TcpStream::connect(("127.0.0.1", self.port))
            .await
            .is_err()
        {
            assert!(tokio::time::Instant::now() < deadline, "nats-server starts");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Stops the server (SIGKILL, as a crash would) and waits until it is gone.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for PrivateNats {
    fn drop(&mut self) {
        self.stop();
    }
}
