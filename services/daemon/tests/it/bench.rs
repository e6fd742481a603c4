//! `make bench` in its quick version: it runs to the end and its JSON names every figure of
//! issues 10 and 11 with a value, a unit, and a ceiling and ratio where it is compared with one.
//! Only completeness is checked here; the numbers are the bench's business.

use serde_json::Value;

const FIGURES: [&str; 19] = [
    "raw_jetstream_publish_per_s",
    "raw_postgres_commit_per_s",
    "raw_postgres_batch_rows_per_s",
    "ingest_lines_per_s_jobs_1",
    "ingest_lines_per_s_jobs_10",
    "ingest_lines_per_s_jobs_100",
    "pipeline_lines_per_s_jobs_10",
    "relay_events_per_s",
    "line_to_sse_p50_ms",
    "line_to_sse_p99_ms",
    "post_vms_p50_ms",
    "post_vms_p99_ms",
    "post_vms_per_s",
    "command_on_20k_events_ms",
    "events_seq_read_per_s",
    "replay_events_per_s",
    "sse_clients",
    "sse_memory_per_connection_kib",
    "sse_fanout_p99_ms",
];

/// The bench example of this build, built like the runner (`helpers::runner_bin`).
fn bench_bin() -> std::path::PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().and_then(|deps| deps.parent()).unwrap();
    let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") | None => "dev",
        Some(other) => other,
    };
    let status = std::process::Command::new(env!("CARGO"))
        .args(["build", "--quiet", "-p", "daemon", "--example", "bench"])
        .arg("--profile")
        .arg(profile)
        .arg("--target-dir")
        .arg(profile_dir.parent().unwrap())
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .expect("cargo runs");
    assert!(status.success(), "could not build the bench");
    profile_dir.join("examples").join("bench")
}

#[tokio::test]
async fn the_quick_bench_writes_every_figure_with_its_ceiling_and_ratio() {
    let bin = bench_bin();
    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("bench.json");
    let run = tokio::process::Command::new(bin)
        .env("BENCH_QUICK", "1")
        .env("BENCH_OUT", &json)
        .current_dir(out.path())
        .output()
        .await
        .unwrap();
    assert!(
        run.status.success(),
        "the bench failed:\n{}\n{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    let report: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert!(report["machine"]["cpus"].as_u64().unwrap() > 0, "{report}");
    assert_eq!(report["machine"]["quick"], true);
    let figures = report["figures"].as_array().unwrap();
    let named: Vec<&str> = figures
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    for name in FIGURES {
        let figure = figures
            .iter()
            .find(|f| f["name"] == *name)
            .unwrap_or_else(|| panic!("no figure {name} in {named:?}"));
        assert!(figure["value"].as_f64().unwrap() >= 0.0, "{figure}");
        assert!(figure["unit"].is_string(), "{figure}");
        // Stand alone: the raw figures, the plain read the replay is compared with, and the
        // count of SSE clients the fan-out ran with.
        if name.starts_with("raw_") || name == "events_seq_read_per_s" || name == "sse_clients" {
            assert!(
                figure["ceiling"].is_null(),
                "a ceiling stands alone: {figure}"
            );
        } else {
            assert!(figure["ceiling"].as_f64().unwrap() > 0.0, "{figure}");
            assert!(figure["ratio"].is_f64(), "{figure}");
        }
    }
    assert_eq!(figures.len(), FIGURES.len(), "{named:?}");
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(stdout.contains("command_on_20k_events_ms"), "{stdout}");
}
