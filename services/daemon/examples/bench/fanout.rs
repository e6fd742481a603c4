//! Many SSE clients on one daemon, each following its own VM, with Terraform lines at a
//! steady rate in total: the daemon's memory per connection and how long a line takes from
//! the runner's publish to its client. The daemon runs as a child process (this program,
//! started again with `BENCH_SERVE`), so its memory is its own; the clients are plain
//! sockets that read and parse little.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bus::{Bus, Publisher, RunnerMessage, RunnerReport};
use domain::provisioning::{JobId, VmId};
use store::PgPool;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;

use crate::Error;

pub struct Fanout {
    pub clients: usize,
    pub memory_per_connection_kib: f64,
    /// Milliseconds from publish to client, one per line received.
    pub latencies: Vec<f64>,
}

/// Runs the program as the child process of [`fanout`]: prints its address, then serves
/// until it is killed.
pub async fn serve(database_url: &str, prefix: &str) -> Result<(), Error> {
    let (address, _stop) = crate::app::start(database_url, prefix).await?;
    println!("{address}");
    std::future::pending::<()>().await;
    Ok(())
}

pub async fn fanout(
    pool: &PgPool,
    bus: &Bus,
    database_url: &str,
    clients: usize,
    rate: u32,
    time: Duration,
) -> Result<Fanout, Error> {
    let vms = crate::ingest::vms_with_jobs(pool, clients).await?;
    let mut child = tokio::process::Command::new(std::env::current_exe()?)
        .env("BENCH_SERVE", database_url)
        .env("BENCH_PREFIX", bus.subjects.prefix())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let pid = child.id().ok_or("the daemon exited at once")?;
    let mut stdout = BufReader::new(child.stdout.take().ok_or("no stdout")?);
    let mut address = String::new();
    tokio::time::timeout(Duration::from_secs(60), stdout.read_line(&mut address)).await??;
    let address = address.trim().trim_start_matches("http://").to_owned();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let before = rss_kib(pid)?;

    let connected = Arc::new(AtomicUsize::new(0));
    let latencies = Arc::new(Mutex::new(Vec::new()));
    let mut readers = vec![];
    for vm in &vms {
        let stream = tokio::net::TcpStream::connect(&address).await?;
        readers.push(tokio::spawn(read_stream(
            stream,
            format!(
                "GET /api/v1/vms/{vm}/stream HTTP/1.1\r\nHost: {address}\r\n\
                 Authorization: Bearer {}\r\nAccept: text/event-stream\r\n\r\n",
                crate::app::TOKEN
            ),
            connected.clone(),
            latencies.clone(),
        )));
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    while connected.load(Ordering::SeqCst) < clients {
        if Instant::now() > deadline {
            return Err("not every SSE client got its stream within 60 s".into());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The streams sent their backlog; now the lines, spread over the VMs.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let mut peak = rss_kib(pid)?;
    let keys = crate::ingest::keys(pool).await?;
    let keys: Vec<_> = vms
        .iter()
        .map(|vm| keys.for_job(*vm, JobId::FIRST))
        .collect();
    let mut publisher = Publisher::new(bus.jetstream.clone(), 200);
    let period = Duration::from_secs(1) / rate;
    let total = (time.as_secs_f64() * f64::from(rate)) as usize;
    let start = Instant::now();
    for n in 0..total {
        tokio::time::sleep_until((start + period * n as u32).into()).await;
        let vm = vms[n % clients];
        let line = stamped_line(vm, (n / clients) as u32 + 1);
        publisher
            .publish_runner(&bus.subjects, &keys[n % clients], &line)
            .await?;
        if n % 500 == 0 {
            peak = peak.max(rss_kib(pid)?);
        }
    }
    publisher.flush().await?;
    let deadline = Instant::now() + Duration::from_secs(30);
    while latencies.lock().await.len() < total && Instant::now() < deadline {
        peak = peak.max(rss_kib(pid)?);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for reader in readers {
        reader.abort();
    }
    child.kill().await?;
    let mut latencies = std::mem::take(&mut *latencies.lock().await);
    // A line that never arrived counts as late as the wait for it (30 s).
    latencies.resize(total.max(latencies.len()), 30_000.0);
    Ok(Fanout {
        clients,
        memory_per_connection_kib: peak.saturating_sub(before) as f64 / clients as f64,
        latencies,
    })
}

/// A line whose message is the time it was published, in microseconds since the epoch.
fn stamped_line(vm: VmId, line: u32) -> RunnerMessage {
    RunnerMessage {
        vm_id: vm,
        job_id: JobId::FIRST,
        report: RunnerReport::Log {
            line,
            level: "info".into(),
            kind: "apply_progress".into(),
            message: format!("sent={}", now_micros()),
        },
    }
}

fn now_micros() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_micros()
}

/// Reads one stream, noting each stamped line's latency.
async fn read_stream(
    mut stream: tokio::net::TcpStream,
    request: String,
    connected: Arc<AtomicUsize>,
    latencies: Arc<Mutex<Vec<f64>>>,
) -> Result<(), Error> {
    stream.write_all(request.as_bytes()).await?;
    let mut buffer = vec![0u8; 4096];
    let mut pending = String::new();
    let mut answered = false;
    loop {
        let n = stream.read(&mut buffer).await?;
        if n == 0 {
            return Ok(());
        }
        let now = now_micros();
        pending.push_str(&String::from_utf8_lossy(&buffer[..n]));
        if !answered && pending.contains("\r\n\r\n") {
            answered = true;
            if !pending.starts_with("HTTP/1.1 200") {
                return Err(format!(
                    "the stream answered {}",
                    pending.lines().next().unwrap_or("")
                )
                .into());
            }
            connected.fetch_add(1, Ordering::SeqCst);
        }
        while let Some(at) = pending.find("sent=") {
            let digits: String = pending[at + 5..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            if at + 5 + digits.len() >= pending.len() {
                break; // the number may go on in the next read
            }
            pending.drain(..at + 5 + digits.len());
            if let Ok(sent) = digits.parse::<u128>() {
                latencies
                    .lock()
                    .await
                    .push(now.saturating_sub(sent) as f64 / 1000.0);
            }
        }
        if pending.len() > 8192 {
            // Keep the tail only: a marker may have begun in it.
            let cut = (pending.len() - 64..pending.len())
                .find(|&i| pending.is_char_boundary(i))
                .unwrap_or(pending.len());
            pending.drain(..cut);
        }
    }
}

/// The resident memory of a process, in KiB.
fn rss_kib(pid: u32) -> Result<u64, Error> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|kb| kb.parse().ok())
        .ok_or_else(|| "no VmRSS".into())
}
