//! The runner under faults: a signal while Terraform runs, a NATS outage during an apply,
//! output that is not clean text. Terraform is wrapped by a script (`TERRAFORM_BIN`) that
//! misbehaves on cue during `apply` and runs the real binary for everything else.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::json;

use crate::helpers::{try_spawn_app, TestApp};
use crate::private_nats::PrivateNats;
use crate::wire::LogLine;

/// Writes a Terraform wrapper into `dir`: for `apply` it runs `apply_script` (a shell
/// fragment; `$DIR` is `dir`, `$REAL` the real Terraform), for anything else the real
/// binary.
fn terraform_wrapper(dir: &Path, apply_script: &str) -> PathBuf {
    let real = std::env::var("TERRAFORM_BIN").unwrap_or_else(|_| "terraform".into());
    let path = dir.join("terraform");
    let script = format!(
        "#!/bin/sh\nDIR='{}'\nREAL='{real}'\n[ \"$1\" = apply ] || exec \"$REAL\" \"$@\"\n{apply_script}\n",
        dir.display()
    );
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

async fn wait_for_file(path: &Path) -> String {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(text) = std::fs::read_to_string(path) {
            if !text.is_empty() {
                return text;
            }
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{} never appeared",
            path.display()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn logs(app: &TestApp, id: &str) -> Vec<LogLine> {
    app.get_json(&format!("/api/v1/vms/{id}/logs?limit=1000"))
        .await
}

/// The messages of the log lines that start with `prefix`.
fn messages_starting(logs: &[LogLine], prefix: &str) -> Vec<String> {
    logs.iter()
        .filter(|l| l.message.starts_with(prefix))
        .map(|l| l.message.clone())
        .collect()
}

#[tokio::test]
async fn a_runner_told_to_stop_interrupts_terraform_and_reports_everything_it_prints() {
    let dir = tempfile::tempdir().unwrap();
    // Prints until interrupted, then goes on printing for 2 s as Terraform does while it
    // stops cleanly; a SIGTERM reaching it would be recorded too.
    let terraform = terraform_wrapper(
        dir.path(),
        r#"trap 'echo INT >> "$DIR/signals"; stop=1' INT
trap 'echo TERM >> "$DIR/signals"' TERM
echo $PPID > "$DIR/runner.pid"
stop=0; i=0
while [ $stop = 0 ] && [ $i -lt 600 ]; do i=$((i+1)); echo "working $i"; sleep 0.1; done
for j in $(seq 1 20); do echo "stopping $j"; sleep 0.1; done
exit 1"#,
    );
    let app = try_spawn_app(daemon::Roles::ALL, |c| c.terraform_bin = terraform)
        .await
        .unwrap();
    let id = app.create_ok(json!({})).await;
    let runner: i32 = wait_for_file(&dir.path().join("runner.pid"))
        .await
        .trim()
        .parse()
        .unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;

    let status = std::process::Command::new("kill")
        .args(["-TERM", &runner.to_string()])
        .status()
        .unwrap();
    assert!(status.success());

    let vm = app.wait_for_status(&id, "failed").await;
    let signals = std::fs::read_to_string(dir.path().join("signals")).unwrap();
    assert_eq!(
        signals, "INT\n",
        "terraform is interrupted once, never terminated"
    );
    let error = vm.last_error.unwrap_or_default();
    assert!(
        !error.contains("before reporting"),
        "the runner reported the result itself: {error}"
    );
    let logs = logs(&app, &id).await;
    let working = messages_starting(&logs, "working ");
    assert!(!working.is_empty());
    let expected: Vec<String> = (1..=working.len())
        .map(|i| format!("working {i}"))
        .collect();
    assert_eq!(working, expected);
    let stopping = messages_starting(&logs, "stopping ");
    let expected: Vec<String> = (1..=20).map(|i| format!("stopping {i}")).collect();
    assert_eq!(
        stopping, expected,
        "every line printed while stopping is kept"
    );
    app.assert_consumers_drained().await;
}

#[tokio::test]
async fn an_apply_survives_a_ten_second_nats_outage() {
    let mut nats = PrivateNats::start().await;
    let dir = tempfile::tempdir().unwrap();
    let terraform = terraform_wrapper(
        dir.path(),
        // About 20 lines a second: far more lines than acknowledgements the runner lets
        // wait while NATS is away, so it has to send again.
        r#"echo go > "$DIR/applying"
for i in $(seq 1 300); do echo "marker $i"; sleep 0.05; done
exec "$REAL" "$@""#,
    );
    let url = nats.url();
    let app = try_spawn_app(daemon::Roles::ALL, |c| {
        c.terraform_bin = terraform;
        c.nats_url = url;
    })
    .await
    .unwrap();
    let id = app.create_ok(json!({})).await;
    wait_for_file(&dir.path().join("applying")).await;
    tokio::time::sleep(Duration::from_secs(2)).await;

    nats.stop();
    tokio::time::sleep(Duration::from_secs(10)).await;
    nats.start_again().await;

    app.wait_for_status(&id, "provisioned").await;
    let logs = logs(&app, &id).await;
    let markers = messages_starting(&logs, "marker ");
    let expected: Vec<String> = (1..=300).map(|i| format!("marker {i}")).collect();
    assert_eq!(markers, expected, "every line once, in order");
    let lines: Vec<i64> = logs.iter().map(|l| l.line).collect();
    assert_eq!(lines, (1..=logs.len() as i64).collect::<Vec<_>>());
    // An ack sent as the connection dropped can be lost (acks are not confirmed): its
    // message comes back after the ingester's ack wait (60 s) and is dropped as a
    // duplicate. So the consumers drain within that, not at once.
    app.assert_consumers_drained_within(Duration::from_secs(75))
        .await;
}

#[tokio::test]
async fn odd_bytes_in_terraforms_output_are_recorded_as_clean_text() {
    let dir = tempfile::tempdir().unwrap();
    // Invalid UTF-8, a NUL byte, a NUL escaped in a -json line, a 300 KB line; then the
    // real apply, which must not be cut short.
    let terraform = terraform_wrapper(
        dir.path(),
        r#"printf 'latin1 caf\351\n'
printf 'nul a\000b\n'
printf '{"@level":"info","@message":"json nul a\\u0000b","type":"log"}\n'
head -c 300000 /dev/zero | tr '\0' x; echo
echo "after the long line"
exec "$REAL" "$@""#,
    );
    let app = try_spawn_app(daemon::Roles::ALL, |c| c.terraform_bin = terraform)
        .await
        .unwrap();
    let id = app.create_ok(json!({})).await;

    app.wait_for_status(&id, "provisioned").await;

    let logs = logs(&app, &id).await;
    let message = |prefix: &str| {
        messages_starting(&logs, prefix)
            .pop()
            .unwrap_or_else(|| panic!("no line starts with {prefix}"))
    };
    assert_eq!(message("latin1 "), "latin1 caf\u{FFFD}");
    assert_eq!(message("nul "), "nul a\\0b");
    assert_eq!(message("json nul "), "json nul a\\0b");
    let long = message("xxxx");
    assert!(long.len() < 20_000, "{}", long.len());
    assert!(long.ends_with(" bytes]"), "cut with a marker");
    message("after the long line");
    assert!(logs
        .iter()
        .any(|l| l.message.starts_with("Apply complete!")));
    app.assert_consumers_drained().await;
}
