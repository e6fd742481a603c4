//! The figures a user sees, through the whole program on port 0: a Terraform line's way to
//! an SSE client, `POST /api/v1/vms` under 50 clients, and one command on a long VM.

use std::time::{Duration, Instant};

use bus::Bus;
use daemon::{Application, Config, Roles};
use domain::provisioning::{JobId, LogLineIn, Provisioning, ProvisioningCommand, VmId};
use futures::StreamExt;
use secrecy::SecretString;
use store::{Metadata, PgPool};
use tokio_util::sync::CancellationToken;

use crate::Error;

pub const TOKEN: &str = "bench-admin-token";

/// The program with every role but the dispatcher (no runner is started: the bench plays
/// the runners), on the bench's database and NATS prefix.
pub async fn start(database_url: &str, prefix: &str) -> Result<(String, CancellationToken), Error> {
    let mut config = Config::from_env()?;
    config.http_addr = "127.0.0.1:0".parse()?;
    config.database_url = database_url.to_owned().into();
    config.tf_backend_url = database_url.to_owned().into();
    config.nats_prefix = prefix.to_owned();
    config.hcl_dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../hcl").into();
    // The fan-out plays thousands of users with one token: one caller's cap would stop it.
    config.streams_per_caller = usize::MAX;
    let roles = Roles {
        dispatcher: false,
        ..Roles::ALL
    };
    let app = Application::build(config, roles, Some(SecretString::from(TOKEN))).await?;
    let address = format!("http://127.0.0.1:{}", app.port());
    let cancel = app.shutdown_token();
    tokio::spawn(app.run_until_stopped());
    Ok((address, cancel))
}

/// Milliseconds from a runner's publish of each line to an SSE client of the VM reading it,
/// for `lines` lines published at `rate` per second.
pub async fn line_to_sse(
    pool: &PgPool,
    bus: &Bus,
    address: &str,
    lines: u32,
    rate: u32,
) -> Result<Vec<f64>, Error> {
    let vm = crate::ingest::vms_with_jobs(pool, 1).await?[0];
    let response = reqwest::Client::new()
        .get(format!("{address}/api/v1/vms/{vm}/stream"))
        .bearer_auth(TOKEN)
        .send()
        .await?
        .error_for_status()?;
    let reader = tokio::spawn(read_lines(response, lines));
    // Let the stream subscribe and send its backlog before the clock starts.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let key = crate::ingest::keys(pool).await?.for_job(vm, JobId::FIRST);
    let start = Instant::now();
    let mut sent = vec![];
    let period = Duration::from_secs(1) / rate;
    for n in 1..=lines {
        tokio::time::sleep_until((start + period * (n - 1)).into()).await;
        sent.push(Instant::now());
        bus.publish_runner_message(&key, &crate::ingest::line(vm, n))
            .await?;
    }
    let received = tokio::time::timeout(Duration::from_secs(60), reader).await???;
    Ok(received
        .into_iter()
        .zip(sent)
        .map(|(got, sent)| got.duration_since(sent).as_secs_f64() * 1000.0)
        .collect())
}

/// When each `LogLine` of the stream arrived, in line order, until `lines` of them did.
async fn read_lines(response: reqwest::Response, lines: u32) -> Result<Vec<Instant>, Error> {
    let mut arrived = vec![];
    let mut body = response.bytes_stream();
    let mut pending = String::new();
    while arrived.len() < lines as usize {
        let Some(chunk) = body.next().await else {
            return Err("the event stream ended".into());
        };
        let now = Instant::now();
        pending.push_str(&String::from_utf8_lossy(&chunk?));
        while let Some(end) = pending.find("\n\n") {
            let event: String = pending.drain(..end + 2).collect();
            if event.lines().any(|l| l == "event: LogLine") {
                arrived.push(now);
            }
        }
    }
    Ok(arrived)
}

/// Latencies (ms) of `POST /api/v1/vms` from `clients` clients for `time`, each answer
/// checked to be `202`, and how many answered per second.
pub async fn post_vms(
    address: &str,
    clients: usize,
    time: Duration,
) -> Result<(Vec<f64>, f64), Error> {
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(clients)
        .build()?;
    let start = Instant::now();
    let clients = (0..clients).map(|c| {
        let http = http.clone();
        async move {
            let mut latencies = vec![];
            while start.elapsed() < time {
                let body = serde_json::json!({
                    "name": format!("bench-{c}-{}", latencies.len()),
                    "provider": "local",
                    "template": "small",
                    "ssh_public_key": crate::SSH_KEY,
                    "allow_ssh_from": ["192.0.2.0/24"],
                    "duration_hours": 8,
                });
                let sent = Instant::now();
                let response = http
                    .post(format!("{address}/api/v1/vms"))
                    .bearer_auth(TOKEN)
                    .json(&body)
                    .send()
                    .await?;
                let status = response.status();
                let text = response.text().await?;
                if status.as_u16() != 202 {
                    return Err(format!("POST /api/v1/vms answered {status}: {text}").into());
                }
                latencies.push(sent.elapsed().as_secs_f64() * 1000.0);
            }
            Ok::<_, Error>(latencies)
        }
    });
    let mut all = vec![];
    for latencies in futures::future::join_all(clients).await {
        all.extend(latencies?);
    }
    let rate = all.len() as f64 / start.elapsed().as_secs_f64();
    Ok((all, rate))
}

/// A VM whose first job has `lines` Terraform lines, recorded a thousand at a time.
pub async fn long_vm(pool: &PgPool, lines: u32) -> Result<VmId, Error> {
    let vm = crate::ingest::vms_with_jobs(pool, 1).await?[0];
    let meta = Metadata::new(store::Actor::Runner, vm.to_string());
    for first in (1..=lines).step_by(1000) {
        let lines = (first..(first + 1000).min(lines + 1))
            .map(|line| LogLineIn {
                line,
                level: "info".into(),
                kind: "apply_progress".into(),
                message: format!("aws_instance.vm: Still creating... [{line}s elapsed]"),
            })
            .collect();
        let command = ProvisioningCommand::RecordLogs {
            job_id: JobId::FIRST,
            lines,
        };
        store::execute::<Provisioning>(pool, vm, command, &meta).await?;
    }
    Ok(vm)
}

/// Milliseconds one command takes on `vm` (load, decide, commit one more line), the mean of
/// `runs`; `next` is the VM's next line number.
pub async fn command_on(pool: &PgPool, vm: VmId, next: u32, runs: u32) -> Result<f64, Error> {
    let meta = Metadata::new(store::Actor::Runner, vm.to_string());
    let start = Instant::now();
    for n in next..next + runs {
        let command = ProvisioningCommand::RecordLogs {
            job_id: JobId::FIRST,
            lines: vec![LogLineIn {
                line: n,
                level: "info".into(),
                kind: "apply_progress".into(),
                message: "one more line".into(),
            }],
        };
        store::execute::<Provisioning>(pool, vm, command, &meta).await?;
    }
    Ok(start.elapsed().as_secs_f64() * 1000.0 / f64::from(runs))
}
