//! What every fault test checks at its end (issue: "nothing acknowledged is lost and
//! nothing runs twice"):
//! - every VM in the status the test expects;
//! - each job's Terraform `apply`/`destroy` ran exactly once (the wrapper's invocations; a
//!   run the runner repeated because another run held the state lock, which it logs, did
//!   nothing and is not counted);
//! - every marker line the wrapper printed is in the VM's log exactly once, in order;
//! - JetStream's events stream holds exactly the events Postgres holds, each once;
//! - the dispatcher's and the ingester's consumers have every message acknowledged.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use futures::StreamExt;

use crate::daemon::Daemon;
use crate::wrapper::Wrapper;

/// What one VM should show at the end.
#[derive(Debug, Clone)]
pub struct Expect {
    pub vm: String,
    pub status: &'static str,
    /// Jobs of each action that ran Terraform: `apply` and `destroy` runs.
    pub applies: usize,
    pub destroys: usize,
    pub markers: Markers,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Markers {
    /// Every printed marker is in the log.
    All,
    /// The log holds the first markers printed, in order, none twice: a runner killed
    /// mid-run loses what it had not yet published.
    Prefix,
}

impl Expect {
    /// Created and provisioned: one apply, every marker.
    pub fn provisioned(vm: &str) -> Expect {
        Expect {
            vm: vm.to_owned(),
            status: "provisioned",
            applies: 1,
            destroys: 0,
            markers: Markers::All,
        }
    }

    /// Created, then destroyed: one apply and one destroy, every marker.
    pub fn destroyed(vm: &str) -> Expect {
        Expect {
            vm: vm.to_owned(),
            status: "destroyed",
            applies: 1,
            destroys: 1,
            markers: Markers::All,
        }
    }
}

/// Runs every check; panics with what is wrong. The daemon must run (its API answers).
pub async fn check_all(daemon: &Daemon, wrapper: &Wrapper, expected: &[Expect]) {
    for expect in expected {
        check_status(daemon, expect).await;
        check_runs(daemon, wrapper, expect).await;
        check_markers(daemon, wrapper, expect).await;
    }
    check_events_stream(daemon).await;
    check_consumers_drained(daemon).await;
}

/// The VM's status, given the projector up to 10 s to catch up.
pub async fn check_status(daemon: &Daemon, expect: &Expect) {
    daemon
        .wait_for_status(&expect.vm, expect.status, Duration::from_secs(10))
        .await;
}

/// `apply`/`destroy` ran once per job, not counting the runs that found the state locked.
pub async fn check_runs(daemon: &Daemon, wrapper: &Wrapper, expect: &Expect) {
    let log = log_messages(daemon, &expect.vm).await;
    for (action, jobs) in [("apply", expect.applies), ("destroy", expect.destroys)] {
        let retried = format!("the state is locked by another run; trying {action} again");
        let retries = log.iter().filter(|m| m.starts_with(&retried)).count();
        let runs = wrapper.count(&expect.vm, action);
        assert_eq!(
            runs,
            jobs + retries,
            "VM {}: Terraform {action} ran {runs} times for {jobs} jobs ({retries} lock retries)",
            expect.vm
        );
    }
}

/// The VM's log holds the printed markers once each, in order (all, or the first ones).
pub async fn check_markers(daemon: &Daemon, wrapper: &Wrapper, expect: &Expect) {
    let printed = wrapper.printed(&expect.vm);
    // The projector writes the log lines after the ingester: up to 10 s to catch up.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let logged: Vec<String> = log_messages(daemon, &expect.vm)
            .await
            .into_iter()
            .filter(|m| m.starts_with("marker "))
            .collect();
        let complete = match expect.markers {
            Markers::All => logged == printed,
            Markers::Prefix => printed.starts_with(&logged),
        };
        if complete {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "VM {}: the log's markers {logged:?} are not {:?} of the printed {printed:?}",
            expect.vm,
            expect.markers
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The messages of the VM's log, in order (read from the read model).
pub async fn log_messages(daemon: &Daemon, vm: &str) -> Vec<String> {
    store::sqlx::query_scalar(
        "SELECT message FROM vm_logs WHERE vm_id::text = $1 ORDER BY job_id, line",
    )
    .bind(vm)
    .fetch_all(&daemon.pool)
    .await
    .unwrap()
}

type EventKey = (String, String, u64);

/// The events stream holds each event of the events table exactly once, and nothing else,
/// given the relay up to 15 s to catch up.
pub async fn check_events_stream(daemon: &Daemon) {
    let bus = bus::Bus::connect(&daemon.nats_url, &daemon.prefix)
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let rows: Vec<(String, String, i64)> =
            store::sqlx::query_as("SELECT aggregate_type, aggregate_id, sequence FROM events")
                .fetch_all(&daemon.pool)
                .await
                .unwrap();
        let mut in_db: BTreeMap<EventKey, usize> = BTreeMap::new();
        for (kind, id, seq) in rows {
            *in_db.entry((kind, id, seq as u64)).or_default() += 1;
        }
        let mut in_stream: BTreeMap<EventKey, usize> = BTreeMap::new();
        for e in stream_events(&bus).await {
            *in_stream
                .entry((e.aggregate_type, e.aggregate_id, e.sequence))
                .or_default() += 1;
        }
        if in_db == in_stream {
            return;
        }
        let twice: Vec<_> = in_stream.iter().filter(|(_, n)| **n > 1).collect();
        assert!(twice.is_empty(), "events published twice: {twice:?}");
        let extra: Vec<_> = in_stream
            .keys()
            .filter(|k| !in_db.contains_key(*k))
            .collect();
        assert!(
            extra.is_empty(),
            "events in the stream, not in Postgres: {extra:?}"
        );
        let missing: Vec<_> = in_db
            .keys()
            .filter(|k| !in_stream.contains_key(*k))
            .collect();
        assert!(
            Instant::now() < deadline,
            "events in Postgres never published: {missing:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Every message of the events stream, read with an ephemeral consumer that asks for no
/// acks: with acks, it would stop after `max_ack_pending` (1,000) unacknowledged messages
/// and deliver them again after the ack wait, and they would count twice.
pub async fn stream_events(bus: &bus::Bus) -> Vec<bus::EventEnvelope> {
    use bus::async_nats::jetstream::consumer::pull;
    let stream = bus
        .jetstream
        .get_stream(bus.subjects.stream("EVENTS"))
        .await
        .unwrap();
    let total = stream.get_info().await.unwrap().state.messages as usize;
    if total == 0 {
        return vec![];
    }
    let consumer = stream
        .create_consumer(pull::Config {
            ack_policy: bus::async_nats::jetstream::consumer::AckPolicy::None,
            ..Default::default()
        })
        .await
        .unwrap();
    let mut messages = consumer.messages().await.unwrap().take(total);
    let mut out = vec![];
    while let Some(message) = messages.next().await {
        let message = message.unwrap();
        out.push(serde_json::from_slice(&message.payload).unwrap());
    }
    out
}

/// The dispatcher's and the ingester's consumers have every message delivered and
/// acknowledged. A message a killed daemon had received comes again only after the
/// consumer's ack wait (nats/jetstream.toml: 60 s for the ingester), so this waits up to
/// 130 s.
pub async fn check_consumers_drained(daemon: &Daemon) {
    let bus = bus::Bus::connect(&daemon.nats_url, &daemon.prefix)
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(130);
    for (stream, name) in [("JOBS", "dispatcher"), ("RUNNER", "ingester")] {
        let mut consumer = bus::consumer(&bus, stream, name).await.unwrap();
        loop {
            let info = consumer.info().await.unwrap();
            if info.num_pending == 0 && info.num_ack_pending == 0 {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{stream}/{name} has {} messages undelivered and {} unacknowledged",
                info.num_pending,
                info.num_ack_pending
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// Prints how long a test took (the suite's timings are read from this).
pub fn took(test: &str, started: Instant) {
    eprintln!(
        "fault test {test} took {:.1} s",
        started.elapsed().as_secs_f64()
    );
}
