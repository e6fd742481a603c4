//! A TCP proxy between the application and Postgres that a test can make refuse, stall or
//! cut connections: the database "goes away" for this test's application only, never for
//! the shared server.

use std::net::SocketAddr;

use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// What the proxy does with connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Forwards both ways.
    Open,
    /// Closes every connection, open ones included, and new ones at once.
    Refuse,
    /// Keeps every connection open and forwards nothing: a network that drops packets.
    Stall,
}

pub struct Proxy {
    pub address: SocketAddr,
    mode: watch::Sender<Mode>,
    task: tokio::task::JoinHandle<()>,
}

impl Proxy {
    /// A proxy to `target`, open.
    pub async fn start(target: SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let (mode, watch) = watch::channel(Mode::Open);
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                tokio::spawn(serve(client, target, watch.clone()));
            }
        });
        Proxy {
            address,
            mode,
            task,
        }
    }

    pub fn set(&self, mode: Mode) {
        self.mode.send_replace(mode);
    }

    /// `url` (a Postgres URL) with its host and port replaced by the proxy's.
    pub fn url(&self, url: &str) -> String {
        let mut url = url::Url::parse(url).unwrap();
        url.set_host(Some("127.0.0.1")).unwrap();
        url.set_port(Some(self.address.port())).unwrap();
        url.to_string()
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(mut client: TcpStream, target: SocketAddr, mut mode: watch::Receiver<Mode>) {
    let now = *mode.borrow_and_update();
    match now {
        Mode::Refuse => return, // dropping the socket closes it
        Mode::Stall => {
            // Held, unanswered, until the mode changes; then closed.
            let _ = mode.changed().await;
            return;
        }
        Mode::Open => {}
    }
    let Ok(mut upstream) = TcpStream::connect(target).await else {
        return;
    };
    let (mut client_read, mut client_write) = client.split();
    let (mut up_read, mut up_write) = upstream.split();
    let forward = async {
        tokio::select! {
            _ = tokio::io::copy(&mut client_read, &mut up_write) => {}
            _ = tokio::io::copy(&mut up_read, &mut client_write) => {}
        }
    };
    let cut = tokio::select! {
        _ = forward => None,
        changed = mode.wait_for(|m| *m != Mode::Open) => changed.ok().map(|m| *m),
    };
    if cut == Some(Mode::Stall) {
        // Hold both sockets and forward nothing until the mode changes again.
        let _ = mode.changed().await;
    }
    let _ = client.shutdown().await;
}

/// The address of the Postgres server in `url`.
pub fn target_of(url: &str) -> SocketAddr {
    let url = url::Url::parse(url).unwrap();
    let host = url.host_str().unwrap_or("127.0.0.1");
    let host = if host == "localhost" {
        "127.0.0.1"
    } else {
        host
    };
    format!("{host}:{}", url.port().unwrap_or(5432))
        .parse()
        .expect("the test database is on a numeric address")
}
