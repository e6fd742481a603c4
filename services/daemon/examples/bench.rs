//! `make bench`: measures the pipeline on this machine against real Postgres and NATS, and
//! prints figures. Compare them with the ceilings in DESIGN.md measured on the same kind of
//! machine (Postgres 100-row transactions about 8.9k rows/s; JetStream publish with 200
//! acks in flight about 94k msg/s).

use std::time::{Duration, Instant};

use bus::{Bus, Publisher, RunnerMessage, RunnerReport};
use domain::provisioning::*;
use store::{Actor, Metadata};
use tokio_util::sync::CancellationToken;

const LINES: u32 = 20_000;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let id = uuid::Uuid::new_v4().simple().to_string();
    let base = std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| daemon::config::DEFAULT_DATABASE_URL.to_owned());
    let mut url = url::Url::parse(&base)?;
    url.set_path(&format!("provbench_{}", &id[..12]));
    let nats =
        std::env::var("NATS_URL").unwrap_or_else(|_| daemon::config::DEFAULT_NATS_URL.into());
    let pool = store::connect(url.as_str(), 10).await?;
    store::migrate(&pool).await?;
    let bus = Bus::connect(&nats, &format!("bench{}", &id[..12])).await?;
    bus::setup(&bus, 1).await?;
    println!("provisioning bench: {LINES} Terraform lines of one job");

    // 1. Runner -> JetStream -> ingester -> events, as in production.
    let vm = VmId::new();
    let meta = Metadata::new(Actor::Admin, "bench");
    store::execute::<Provisioning>(
        &pool,
        vm,
        ProvisioningCommand::Request { spec: spec() },
        &meta,
    )
    .await?;
    let job = JobId::FIRST;
    store::execute::<Provisioning>(
        &pool,
        vm,
        ProvisioningCommand::StartJob {
            job_id: job,
            runner: "bench".into(),
        },
        &meta,
    )
    .await?;
    let cancel = CancellationToken::new();
    let ingester = tokio::spawn(
        ingester::Ingester {
            bus: bus.clone(),
            pool: pool.clone(),
        }
        .run(cancel.clone()),
    );
    let start = Instant::now();
    let mut publisher = Publisher::new(bus.jetstream.clone(), 200);
    for line in 1..=LINES {
        let message = RunnerMessage {
            vm_id: vm,
            job_id: job,
            report: RunnerReport::Log {
                line,
                level: "info".into(),
                kind: "apply_progress".into(),
                message: format!("aws_instance.vm: Still creating... [{line}s elapsed]"),
            },
        };
        publisher.publish_runner(&bus.subjects, &message).await?;
    }
    publisher.flush().await?;
    let published = start.elapsed();
    while store::last_sequence(&pool, vm).await? < u64::from(LINES) + 3 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let ingested = start.elapsed();
    cancel.cancel();
    ingester.await?;
    println!(
        "runner publish:   {:>8.0} lines/s  ({LINES} lines in {published:.2?})",
        f64::from(LINES) / published.as_secs_f64()
    );
    println!(
        "ingest to events: {:>8.0} lines/s  (published and committed in {ingested:.2?})",
        f64::from(LINES) / ingested.as_secs_f64()
    );

    // 2. Loading the aggregate to handle a command, with and without snapshots.
    let noop = || ProvisioningCommand::StartJob {
        job_id: job,
        runner: "bench".into(),
    };
    for (name, runs) in [("with snapshots", 20u32), ("events only", 5)] {
        if name == "events only" {
            // The no-op command writes nothing, so no snapshot comes back.
            store::sqlx::query("DELETE FROM snapshots WHERE aggregate_id = $1")
                .bind(vm.to_string())
                .execute(&pool)
                .await?;
        }
        let start = Instant::now();
        for _ in 0..runs {
            store::execute::<Provisioning>(&pool, vm, noop(), &meta).await?;
        }
        println!(
            "command on a VM with {LINES} lines, {name}: {:.2?} each",
            start.elapsed() / runs
        );
    }

    // 3. The relay: committed events to JetStream, in commit order.
    let start = Instant::now();
    let mut relayed = 0;
    loop {
        match relay::pass(&pool, &bus).await? {
            0 if relayed >= LINES as usize => break,
            0 => tokio::time::sleep(Duration::from_millis(10)).await,
            n => relayed += n,
        }
    }
    println!(
        "relay to JetStream: {:>6.0} events/s ({relayed} events in {:.2?})",
        relayed as f64 / start.elapsed().as_secs_f64(),
        start.elapsed()
    );

    for name in ["EVENTS", "JOBS", "RUNNER"] {
        let _ = bus.jetstream.delete_stream(bus.subjects.stream(name)).await;
    }
    pool.close().await;
    let mut admin = url.clone();
    admin.set_path("postgres");
    let admin = store::connect(admin.as_str(), 1).await?;
    store::sqlx::query(&format!(
        "DROP DATABASE IF EXISTS {} WITH (FORCE)",
        &url.path()[1..]
    ))
    .execute(&admin)
    .await?;
    Ok(())
}

fn spec() -> VmSpec {
    VmSpec {
        name: VmName::parse("bench").unwrap(),
        provider: ProviderId::parse("local").unwrap(),
        template: TemplateId::parse("small").unwrap(),
        image_name: "debian-12".into(),
        flavor_name: "local.small".into(),
        ssh_public_key: SshPublicKey::parse(
            "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEpXvA+cP8hcraKOw+cO1rzIpAv7ms7vMYjhAKF7Qed/ bench",
        )
        .unwrap(),
        allow_ssh_from: vec![Cidr::parse("192.0.2.0/24").unwrap()],
        duration_hours: DurationHours::parse(1).unwrap(),
        username: "ubuntu".into(),
    }
}
