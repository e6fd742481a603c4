//! `make bench`: the pipeline's throughput and latency on this machine, against real
//! Postgres and NATS, each figure beside the ceiling it is compared with, both measured in
//! this run (see issue 10 and docs/performance.md). Prints a table with PASS or MISS beside
//! each target and writes the figures as JSON to `BENCH_OUT` (default
//! `target/bench.json`). `BENCH_QUICK=1` runs a small version in about a minute, for the
//! test that checks the JSON is complete; its numbers mean little. `BENCH_ONLY=ingest,app,
//! replay` (any of them) runs only those phases, beside the ceilings.

mod app;
mod fanout;
mod ingest;
mod raw;
mod replay;
mod report;

use std::time::Duration;

use bus::Bus;
use domain::provisioning::*;
use report::{quantile, Figure};
use tokio_util::sync::CancellationToken;

pub type Error = Box<dyn std::error::Error + Send + Sync>;

pub const SSH_KEY: &str =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEpXvA+cP8hcraKOw+cO1rzIpAv7ms7vMYjhAKF7Qed/ bench";

/// How much work each measurement does.
struct Sizes {
    raw_messages: usize,
    raw_time: Duration,
    /// Lines of the one job of `ingest_lines_per_s_jobs_1`.
    one_job_lines: u32,
    /// Lines of all jobs together, for 10 and 100 jobs.
    many_jobs_lines: u32,
    sse_lines: u32,
    post_time: Duration,
    /// VMs and events per VM added for the replay (1M events in all).
    replay_vms: i64,
    replay_per_vm: i64,
    /// SSE clients of the fan-out, each following its own VM, and how long lines flow.
    sse_clients: usize,
    fanout_time: Duration,
}

const FULL: Sizes = Sizes {
    raw_messages: 50_000,
    raw_time: Duration::from_secs(3),
    one_job_lines: 20_000,
    many_jobs_lines: 40_000,
    sse_lines: 5_000,
    post_time: Duration::from_secs(10),
    replay_vms: 1_000,
    replay_per_vm: 1_000,
    sse_clients: 2_000,
    fanout_time: Duration::from_secs(10),
};

const QUICK: Sizes = Sizes {
    raw_messages: 5_000,
    raw_time: Duration::from_secs(1),
    one_job_lines: 2_000,
    many_jobs_lines: 4_000,
    sse_lines: 1_000,
    post_time: Duration::from_secs(2),
    replay_vms: 100,
    replay_per_vm: 500,
    sse_clients: 100,
    fanout_time: Duration::from_secs(2),
};

#[tokio::main]
async fn main() -> Result<(), Error> {
    if let Ok(database_url) = std::env::var("BENCH_SERVE") {
        // The daemon of the SSE fan-out, as a process of its own.
        let prefix = std::env::var("BENCH_PREFIX")?;
        return fanout::serve(&database_url, &prefix).await;
    }
    let quick = std::env::var("BENCH_QUICK").is_ok_and(|v| !v.is_empty() && v != "0");
    let out = std::env::var("BENCH_OUT").unwrap_or_else(|_| "target/bench.json".into());
    let sizes = if quick { &QUICK } else { &FULL };
    let id = uuid::Uuid::new_v4().simple().to_string();
    let base = std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| daemon::config::DEFAULT_DATABASE_URL.to_owned());
    let mut url = url::Url::parse(&base)?;
    url.set_path(&format!("provbench_{}", &id[..12]));
    let nats =
        std::env::var("NATS_URL").unwrap_or_else(|_| daemon::config::DEFAULT_NATS_URL.into());
    let mut admin_url = url.clone();
    admin_url.set_path("postgres");
    let admin = store::connect(admin_url.as_str(), 1).await?;
    store::sqlx::query(&format!("CREATE DATABASE {}", &url.path()[1..]))
        .execute(&admin)
        .await?;
    let prefix = format!("bench{}", &id[..12]);
    let result = run(url.as_str(), &nats, &prefix, sizes, quick).await;
    let bus = Bus::connect(&nats, &prefix).await?;
    for name in ["EVENTS", "JOBS", "RUNNER"] {
        let _ = bus.jetstream.delete_stream(bus.subjects.stream(name)).await;
    }
    store::sqlx::query(&format!(
        "DROP DATABASE IF EXISTS {} WITH (FORCE)",
        &url.path()[1..]
    ))
    .execute(&admin)
    .await?;
    let (machine, figures) = result?;
    println!("\n{}", report::table(&figures));
    let json = report::json(machine, &figures);
    if let Some(dir) = std::path::Path::new(&out).parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(&out, serde_json::to_string_pretty(&json)?)?;
    println!("figures written to {out}");
    Ok(())
}

async fn run(
    database_url: &str,
    nats: &str,
    prefix: &str,
    sizes: &Sizes,
    quick: bool,
) -> Result<(serde_json::Value, Vec<Figure>), Error> {
    let pool = store::connect(database_url, 20).await?;
    store::migrate(&pool).await?;
    let bus = Bus::connect(nats, prefix).await?;
    bus::setup(&bus, 1).await?;
    let postgres: String = store::sqlx::query_scalar("SHOW server_version")
        .fetch_one(&pool)
        .await?;
    let machine = report::machine(&postgres, &bus.client.server_info().version, quick);
    println!(
        "provisioning bench{}: {machine}",
        if quick { " (quick)" } else { "" }
    );

    let js = raw::jetstream_publish(&bus, sizes.raw_messages).await?;
    let commit = raw::postgres_commit(&pool, sizes.raw_time).await?;
    let batch = raw::postgres_batch_rows(&pool, sizes.raw_time).await?;
    println!("ceilings: JetStream {js:.0}/s, commits {commit:.0}/s, batched rows {batch:.0}/s");
    let mut figures = vec![
        Figure::ceiling("raw_jetstream_publish_per_s", js, "msg/s"),
        Figure::ceiling("raw_postgres_commit_per_s", commit, "tx/s"),
        Figure::ceiling("raw_postgres_batch_rows_per_s", batch, "rows/s"),
    ];

    if runs("ingest") {
        figures.extend(ingest_figures(&pool, &bus, sizes, js).await?);
    }
    if runs("app") {
        figures.extend(app_figures(&pool, &bus, database_url, prefix, sizes, commit).await?);
    }
    if runs("replay") {
        figures.extend(replay_figures(&pool, sizes).await?);
    }
    pool.close().await;
    Ok((machine, figures))
}

/// Whether the phase `name` runs: every phase unless `BENCH_ONLY` names some (`ingest`,
/// `app`, `replay`, separated by commas), for a look at one part.
fn runs(name: &str) -> bool {
    match std::env::var("BENCH_ONLY") {
        Ok(only) if !only.trim().is_empty() => only.split(',').any(|p| p.trim() == name),
        _ => true,
    }
}

/// Terraform lines from runners to committed events and on to the events stream.
async fn ingest_figures(
    pool: &store::PgPool,
    bus: &Bus,
    sizes: &Sizes,
    js: f64,
) -> Result<Vec<Figure>, Error> {
    let (pool, bus) = (pool.clone(), bus.clone());
    let cancel = CancellationToken::new();
    let ingester = ingester::Ingester::new(bus.clone(), pool.clone(), ingest::keys(&pool).await?);
    let ingesting = tokio::spawn(ingester.run(cancel.clone()));
    let jobs_1 = ingest::ingest(&pool, &bus, 1, sizes.one_job_lines).await?;
    let jobs_10 = ingest::ingest(&pool, &bus, 10, sizes.many_jobs_lines / 10).await?;
    let jobs_100 = ingest::ingest(&pool, &bus, 100, sizes.many_jobs_lines / 100).await?;
    println!("ingest: {jobs_1:.0}, {jobs_10:.0}, {jobs_100:.0} lines/s with 1, 10, 100 jobs");
    let (relay, relayed) = ingest::relay_backlog(&pool, &bus).await?;
    println!("relay: {relay:.0} events/s ({relayed} events)");
    let relaying = tokio::spawn(relay::run(pool.clone(), bus.clone(), cancel.clone()));
    let pipeline = ingest::pipeline(&pool, &bus, 10, sizes.many_jobs_lines / 10).await?;
    println!("pipeline: {pipeline:.0} lines/s with 10 jobs");
    cancel.cancel();
    ingesting.await?;
    relaying.await?;
    Ok(vec![
        Figure::against("ingest_lines_per_s_jobs_1", jobs_1, "lines/s", js),
        Figure::against("ingest_lines_per_s_jobs_10", jobs_10, "lines/s", js).at_least(0.3),
        Figure::against("ingest_lines_per_s_jobs_100", jobs_100, "lines/s", js),
        Figure::against("pipeline_lines_per_s_jobs_10", pipeline, "lines/s", js).at_least(0.25),
        Figure::against("relay_events_per_s", relay, "events/s", js).at_least(0.5),
    ])
}

/// What a user of the program sees: a line's way to an SSE client, creates under load, a
/// command on a long VM, and many SSE clients at once.
async fn app_figures(
    pool: &store::PgPool,
    bus: &Bus,
    database_url: &str,
    prefix: &str,
    sizes: &Sizes,
    commit: f64,
) -> Result<Vec<Figure>, Error> {
    // The projector catches up before the program starts, so it does not weigh on the
    // latencies below with the backlog of the runs above.
    while projector::pass(pool).await? > 0 {}
    let (address, stop) = app::start(database_url, prefix).await?;
    let mut sse = app::line_to_sse(pool, bus, &address, sizes.sse_lines, 1000).await?;
    let (mut post, post_rate) = app::post_vms(&address, 50, sizes.post_time).await?;
    stop.cancel();
    let fan = fanout::fanout(
        pool,
        bus,
        database_url,
        sizes.sse_clients,
        1000,
        sizes.fanout_time,
    )
    .await?;
    let mut fan_latencies = fan.latencies;
    println!(
        "fan-out: {} SSE clients, {:.1} KiB each, p99 {:.1} ms",
        fan.clients,
        fan.memory_per_connection_kib,
        quantile(&mut fan_latencies, 0.99)
    );
    let long_vm = app::long_vm(pool, 20_000).await?;
    let command = app::command_on(pool, long_vm, 20_001, 20).await?;
    Ok(vec![
        Figure::below("line_to_sse_p50_ms", quantile(&mut sse, 0.5), "ms", 50.0),
        Figure::below("line_to_sse_p99_ms", quantile(&mut sse, 0.99), "ms", 50.0),
        Figure::below("post_vms_p50_ms", quantile(&mut post, 0.5), "ms", 50.0),
        Figure::below("post_vms_p99_ms", quantile(&mut post, 0.99), "ms", 50.0),
        Figure::against("post_vms_per_s", post_rate, "req/s", commit).at_least(0.3),
        Figure::below("command_on_20k_events_ms", command, "ms", 20.0),
        Figure::measured("sse_clients", fan.clients as f64, "clients"),
        Figure::below(
            "sse_memory_per_connection_kib",
            fan.memory_per_connection_kib,
            "KiB",
            64.0,
        ),
        Figure::below(
            "sse_fanout_p99_ms",
            quantile(&mut fan_latencies, 0.99),
            "ms",
            100.0,
        ),
    ])
}

/// A rebuild of every read model beside a plain read of the events table.
async fn replay_figures(pool: &store::PgPool, sizes: &Sizes) -> Result<Vec<Figure>, Error> {
    replay::seed(pool, sizes.replay_vms, sizes.replay_per_vm).await?;
    let (read, rows) = replay::seq_read(pool).await?;
    println!("sequential read: {read:.0} events/s ({rows} events)");
    let replayed = replay::replay(pool).await?;
    println!("replay: {replayed:.0} events/s");
    Ok(vec![
        Figure::ceiling("events_seq_read_per_s", read, "events/s"),
        Figure::against("replay_events_per_s", replayed, "events/s", read).at_least(0.5),
    ])
}

pub fn spec() -> VmSpec {
    VmSpec {
        name: VmName::parse("bench").unwrap(),
        provider: ProviderId::parse("local").unwrap(),
        template: TemplateId::parse("small").unwrap(),
        image_name: "debian-12".into(),
        flavor_name: "local.small".into(),
        ssh_public_key: SshPublicKey::parse(SSH_KEY).unwrap(),
        allow_ssh_from: vec![Cidr::parse("192.0.2.0/24").unwrap()],
        duration_hours: DurationHours::parse(1).unwrap(),
        username: "ubuntu".into(),
        owner: domain::identity::UserId::BUILTIN_ADMIN,
        taskservs: vec![],
        cluster: None,
    }
}
