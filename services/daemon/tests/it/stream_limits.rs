//! What one caller may hold open: at most 16 streams and exports at once (the 17th is a
//! 429 until one closes); and an export in progress ends when the daemon stops, as the
//! streams do, rather than holding its shutdown.

use std::time::Duration;

use daemon::Roles;
use domain::identity::Role;
use domain::provisioning::{JobId, LogLineIn, Provisioning, ProvisioningCommand, VmId};
use serde_json::Value;
use store::{Actor, Metadata};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::helpers::{spawn_app_with, vm_spec, TestApp};

async fn app() -> TestApp {
    spawn_app_with(Roles {
        dispatcher: false,
        ..Roles::ALL
    })
    .await
}

#[tokio::test]
async fn a_caller_holds_at_most_sixteen_streams_and_exports_and_a_closed_one_frees_a_slot() {
    let app = app().await;
    let admin = app.user("admin@example.org", Role::Admin).await;
    let mut open = vec![];
    for n in 0..16 {
        let path = if n % 2 == 0 {
            "/api/v1/vms/stream"
        } else {
            "/api/v1/admin/stream?exclude_logs=true"
        };
        let stream = admin.request("GET", path).send().await.unwrap();
        assert_eq!(stream.status(), 200, "stream {n}");
        open.push(stream);
    }
    // The 17th, whichever it is, is refused; nothing of it stays open.
    for path in [
        "/api/v1/vms/stream",
        "/api/v1/admin/stream",
        "/api/v1/audit/export",
    ] {
        let refused = admin.request("GET", path).send().await.unwrap();
        assert_eq!(refused.status(), 429, "{path}");
        let problem: Value = refused.json().await.unwrap();
        assert_eq!(problem["code"], "too_many_requests", "{problem}");
        assert!(
            problem["detail"].as_str().unwrap().contains("16"),
            "{problem}"
        );
    }
    // Another caller has slots of their own.
    let ada = app.user("ada@example.org", Role::User).await;
    let hers = ada
        .request("GET", "/api/v1/vms/stream")
        .send()
        .await
        .unwrap();
    assert_eq!(hers.status(), 200);

    // One closed: a new one opens (once the server saw it go).
    drop(open.pop());
    let mut status = 0;
    for _ in 0..100 {
        let again = admin
            .request("GET", "/api/v1/vms/stream")
            .send()
            .await
            .unwrap();
        status = again.status().as_u16();
        if status == 200 {
            open.push(again);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(status, 200, "a closed stream's slot was freed");
    let refused = admin
        .request("GET", "/api/v1/vms/stream")
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 429);
}

/// `n` log lines of about 800 bytes from line `from`.
fn lines(from: u32, n: u32) -> Vec<LogLineIn> {
    (from..from + n)
        .map(|line| LogLineIn {
            line,
            level: "info".into(),
            kind: "log".into(),
            message: format!("line {line} {}", "x".repeat(780)),
        })
        .collect()
}

#[tokio::test]
async fn an_export_in_progress_ends_when_the_daemon_stops() {
    let mut app = app().await;
    // About 10 MB of history: far more than the socket buffers hold.
    let vm = VmId::new();
    let meta = Metadata::new(Actor::Admin, "big-history");
    let run = |command| store::execute::<Provisioning>(&app.pool, vm, command, &meta);
    run(ProvisioningCommand::Request {
        at: time::OffsetDateTime::now_utc(),
        spec: vm_spec("big"),
    })
    .await
    .unwrap();
    run(ProvisioningCommand::StartJob {
        job_id: JobId::FIRST,
        runner: "test".into(),
    })
    .await
    .unwrap();
    for batch in 0..30 {
        run(ProvisioningCommand::RecordLogs {
            job_id: JobId::FIRST,
            lines: lines(1 + batch * 400, 400),
        })
        .await
        .unwrap();
    }

    // One client with a small receive buffer starts the export and reads nothing; another
    // reads it slowly (about 800 kB/s: the whole would take over 10 s) until the daemon is
    // asked to stop, then as fast as it can.
    let silent = start_export(&app, 4096).await;
    let mut reader = start_export(&app, 65536).await;
    let fast = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let hurry = fast.clone();
    let reading = tokio::spawn(async move {
        let mut got = 0usize;
        let mut buffer = vec![0u8; 64 * 1024];
        loop {
            match reader.read(&mut buffer).await {
                Ok(0) | Err(_) => return (got, tokio::time::Instant::now()),
                Ok(n) => got += n,
            }
            if !hurry.load(std::sync::atomic::Ordering::SeqCst) {
                tokio::time::sleep(Duration::from_millis(80)).await;
            }
        }
    });
    tokio::time::sleep(Duration::from_millis(500)).await;

    // The daemon stops: the reading client's export ends at once, cut short of the whole
    // (read at full speed, the rest would come within the shutdown grace); the silent one's
    // is cut after that grace, and the daemon is gone.
    let total: i64 = store::sqlx::query_scalar("SELECT sum(length(payload::text)) FROM events")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    let stopping = tokio::time::Instant::now();
    fast.store(true, std::sync::atomic::Ordering::SeqCst);
    tokio::time::timeout(Duration::from_secs(20), app.stop())
        .await
        .expect("the daemon stopped while exports were in progress");
    let (got, ended) = reading.await.unwrap();
    assert!(
        (got as i64) < total,
        "the export was cut, not finished: {got} bytes of more than {total}"
    );
    let after = ended - stopping;
    assert!(
        after < Duration::from_secs(4),
        "the export ended {after:?} after the stop"
    );
    drop(silent);
}

/// A raw connection with a receive buffer of `buffer` bytes that asked for the export (as
/// the admin) and got its status line.
async fn start_export(app: &TestApp, buffer: u32) -> tokio::net::TcpStream {
    let address = app.address.trim_start_matches("http://").to_owned();
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(buffer).unwrap();
    let mut client = socket.connect(address.parse().unwrap()).await.unwrap();
    let request = format!(
        "GET /api/v1/audit/export HTTP/1.0\r\nHost: {address}\r\nAuthorization: Bearer {}\r\n\r\n",
        app.token
    );
    client.write_all(request.as_bytes()).await.unwrap();
    let mut head = [0u8; 12];
    client.read_exact(&mut head).await.unwrap();
    assert_eq!(&head, b"HTTP/1.0 200", "{}", String::from_utf8_lossy(&head));
    client
}
