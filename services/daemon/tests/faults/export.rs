//! The audit export streams: 200k events (about 110 MB of NDJSON) leave the daemon while
//! its resident memory stays within a bound far below the export's size.

use std::time::Duration;

use crate::daemon::{Daemon, Setup};

const EVENTS: i64 = 200_000;
/// How much the daemon's resident memory may grow while it exports.
const GROWTH_BOUND: u64 = 48 << 20;

/// The daemon's resident set size, from `/proc/<pid>/status`.
fn rss_bytes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib << 10
}

#[tokio::test]
async fn an_export_of_200k_events_streams_with_the_daemons_memory_bounded() {
    let mut daemon = Daemon::start(Setup::default()).await;
    // The API alone: no projector or relay folding the bulk insert meanwhile.
    daemon.stop();
    // One statement: 200 VMs of 1000 log lines each, every line some 500 bytes.
    store::sqlx::query(
        "INSERT INTO events (aggregate_type, aggregate_id, sequence, event_type, event_version,
                             payload, metadata)
         SELECT 'Provisioning',
                '00000000-0000-4000-8000-' || lpad(to_hex(g / 1000), 12, '0'),
                g % 1000 + 1, 'LogLine', '1.0',
                json_build_object('type', 'LogLine', 'data', json_build_object(
                    'job_id', 1, 'line', g % 1000 + 1, 'level', 'info', 'kind', 'plain',
                    'message', repeat('terraform says ', 33) || g)),
                '{\"actor\": \"runner\", \"correlation_id\": \"bulk\"}'::json
         FROM generate_series(0, $1 - 1) AS g",
    )
    .bind(EVENTS)
    .execute(&daemon.pool)
    .await
    .unwrap();
    daemon.start_as("api").await;
    let pid = daemon.pid().unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = rss_bytes(pid);

    let client = reqwest::Client::new();
    let mut response = client
        .get(daemon.url("/api/v1/audit/export?type=LogLine"))
        .bearer_auth(&daemon.token)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let (mut bytes, mut lines, mut peak) = (0u64, 0i64, before);
    let mut last_line = Vec::new();
    while let Some(chunk) = response.chunk().await.unwrap() {
        bytes += chunk.len() as u64;
        lines += chunk.iter().filter(|b| **b == b'\n').count() as i64;
        last_line.extend_from_slice(&chunk);
        if let Some(end) = last_line[..last_line.len().saturating_sub(1)]
            .iter()
            .rposition(|b| *b == b'\n')
        {
            last_line.drain(..=end);
        }
        peak = peak.max(rss_bytes(pid));
    }
    assert_eq!(lines, EVENTS, "every event, one per line");
    let last: serde_json::Value = serde_json::from_slice(&last_line).unwrap();
    assert_eq!(last["type"], "LogLine");
    assert!(
        bytes > 2 * GROWTH_BOUND,
        "the export ({bytes} bytes) is much larger than the bound"
    );
    let growth = peak.saturating_sub(before);
    assert!(
        growth < GROWTH_BOUND,
        "the daemon grew by {} MiB exporting {} MiB (from {} MiB)",
        growth >> 20,
        bytes >> 20,
        before >> 20
    );
    println!(
        "exported {lines} events ({} MiB); daemon RSS {} MiB, peak {} MiB",
        bytes >> 20,
        before >> 20,
        peak >> 20
    );
}
