//! A NATS server of one test's own (`nats-server -js` on a free loopback port, with its own
//! store directory), which the test may stop and start again with the same store. The
//! machine's shared server is never stopped.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

pub struct PrivateNats {
    port: u16,
    store: tempfile::TempDir,
    child: Option<Child>,
}

impl PrivateNats {
    pub async fn start() -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut nats = Self {
            port,
            store: tempfile::tempdir().unwrap(),
            child: None,
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
        let child = Command::new("nats-server")
            .args(["-js", "-a", "127.0.0.1", "-p"])
            .arg(self.port.to_string())
            .arg("-sd")
            .arg(self.store.path())
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
