//! The administration through the CLI: the audit history (a page, live with --follow, an
//! NDJSON export), the users, and a policies reload.

use serde_json::Value;

use crate::daemon::Daemon;
use crate::sign_in::start;
use crate::{cli, SSH_KEY};

#[tokio::test]
async fn an_admin_reads_follows_and_exports_the_audit_and_manages_users_and_policies() {
    let daemon = Daemon::start().await;
    let home = tempfile::tempdir().unwrap();
    let config = home.path();
    let token = daemon.personal_token().await;
    cli(
        config,
        &[],
        &["login", &daemon.url, "--token"],
        Some(&token),
    )
    .await
    .expect(0);
    let key = home.path().join("id.pub");
    std::fs::write(&key, SSH_KEY).unwrap();
    let key = key.to_str().unwrap();
    let create = |name: &'static str| {
        vec![
            "vm",
            "create",
            "--provider",
            "local",
            "--template",
            "small",
            "--name",
            name,
            "--ssh-key",
            key,
            "--allow",
            "192.0.2.0/24",
            "-o",
            "json",
        ]
    };

    // Following from now: a VM requested meanwhile shows up live.
    let (mut follower, _stderr) = start(
        config,
        &["admin", "audit", "--follow", "--type", "Requested"],
    );
    // Give the stream a moment to open: it starts from now.
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    let vm = cli(config, &[], &create("audited"), None).await.expect(0);
    let vm: Value = serde_json::from_str(&vm.stdout).unwrap();
    let id = vm["id"].as_str().unwrap().to_owned();
    let pid = follower.id().unwrap().to_string();
    // The event shows on stdout, as it commits.
    let mut stdout = tokio::io::BufReader::new(follower.stdout.take().unwrap());
    let mut line = String::new();
    tokio::time::timeout(
        std::time::Duration::from_secs(30),
        tokio::io::AsyncBufReadExt::read_line(&mut stdout, &mut line),
    )
    .await
    .expect("the followed event shows within 30 s")
    .unwrap();
    assert!(
        line.contains("Requested") && line.contains(&id[..8]),
        "{line}"
    );
    std::process::Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap();
    // Ctrl-C is how following ends: exit 0.
    let ended = tokio::time::timeout(std::time::Duration::from_secs(10), follower.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(ended.code(), Some(0));

    // A page, filtered; then the export of the VM's events, one JSON object a line.
    let page = cli(
        config,
        &[],
        &["admin", "audit", "--type", "Requested"],
        None,
    )
    .await
    .expect(0);
    assert!(page.stdout.starts_with("POSITION"), "{page:#?}");
    assert!(page.stdout.contains("Requested"), "{page:#?}");
    let export = cli(
        config,
        &[],
        &["admin", "audit", "export", "--vm", &id],
        None,
    )
    .await
    .expect(0);
    let events: Vec<Value> = export
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(events[0]["type"], "Requested");
    assert!(events.iter().all(|e| e["aggregate_id"] == id.as_str()));

    // Users: the list, and a refused change said in one line.
    let users = cli(config, &[], &["admin", "users", "list"], None)
        .await
        .expect(0);
    assert!(users.stdout.contains("admin@localhost"), "{users:#?}");
    let nobody = cli(
        config,
        &[],
        &["admin", "users", "disable", "nobody@example.org"],
        None,
    )
    .await
    .expect(1);
    assert_eq!(nobody.stderr.trim(), "error: no user nobody@example.org");

    let reloaded = cli(config, &[], &["admin", "policies", "reload"], None)
        .await
        .expect(0);
    assert!(
        reloaded.stdout.starts_with("Policies reloaded"),
        "{reloaded:#?}"
    );
}
