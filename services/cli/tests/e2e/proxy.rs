//! A TCP proxy in front of the daemon that cuts the first stream it carries once, after a
//! number of the answer's bytes: the connection drops mid-stream (most likely mid-message),
//! as a flaky network or a restarted load balancer would drop it.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

pub struct CuttingProxy {
    pub url: String,
    /// Connections cut so far (at most one).
    pub cuts: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl CuttingProxy {
    /// A proxy to `target` (`http://127.0.0.1:port`) cutting the first stream after
    /// `after_bytes` bytes of its answer.
    pub async fn start(target: &str, after_bytes: usize) -> CuttingProxy {
        let target: SocketAddr = target.trim_start_matches("http://").parse().unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let cuts = Arc::new(AtomicUsize::new(0));
        let armed = Arc::new(AtomicBool::new(true));
        let counter = cuts.clone();
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                tokio::spawn(serve(
                    client,
                    target,
                    after_bytes,
                    armed.clone(),
                    counter.clone(),
                ));
            }
        });
        CuttingProxy { url, cuts, task }
    }
}

impl Drop for CuttingProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(
    client: TcpStream,
    target: SocketAddr,
    after_bytes: usize,
    armed: Arc<AtomicBool>,
    cuts: Arc<AtomicUsize>,
) {
    let Ok(upstream) = TcpStream::connect(target).await else {
        return;
    };
    let (mut client_read, mut client_write) = client.into_split();
    let (mut up_read, mut up_write) = upstream.into_split();
    // Whether this connection carries a stream request that is to be cut.
    let cut_this = Arc::new(AtomicBool::new(false));
    let requests = {
        let cut_this = cut_this.clone();
        async move {
            let mut buf = vec![0u8; 16 * 1024];
            loop {
                let n = match client_read.read(&mut buf).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => n,
                };
                let text = String::from_utf8_lossy(&buf[..n]);
                if text.contains("/stream") && armed.swap(false, Ordering::SeqCst) {
                    cut_this.store(true, Ordering::SeqCst);
                }
                if up_write.write_all(&buf[..n]).await.is_err() {
                    return;
                }
            }
        }
    };
    let answers = async move {
        let mut buf = vec![0u8; 16 * 1024];
        let mut sent = 0;
        loop {
            let n = match up_read.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            let mut n = n;
            if cut_this.load(Ordering::SeqCst) {
                if sent + n >= after_bytes {
                    n = after_bytes - sent;
                    let _ = client_write.write_all(&buf[..n]).await;
                    let _ = client_write.shutdown().await;
                    cuts.fetch_add(1, Ordering::SeqCst);
                    return;
                }
                sent += n;
            }
            if client_write.write_all(&buf[..n]).await.is_err() {
                return;
            }
        }
    };
    // Either side ending ends the connection: both halves are dropped here.
    tokio::select! {
        _ = requests => {}
        _ = answers => {}
    }
}
