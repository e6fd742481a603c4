//! The rest of a VM's verbs and its jobs, as a user sees them: extend, history (now and as
//! it was), jobs, refresh, ssh, a refused cancel, retry, archive; and Ctrl-C during --wait.

use std::time::Duration;

use serde_json::Value;

use crate::daemon::Daemon;
use crate::sign_in::{start, wait_for};
use crate::{cli, SSH_KEY};

/// `vm create` arguments for a VM `name` of `template` on `local`, with the key at `key`.
pub(crate) fn create<'a>(name: &'a str, template: &'a str, key: &'a str) -> Vec<&'a str> {
    vec![
        "vm",
        "create",
        "--provider",
        "local",
        "--template",
        template,
        "--name",
        name,
        "--ssh-key",
        key,
        "--allow",
        "192.0.2.0/24",
        "--hours",
        "1",
    ]
}

#[tokio::test]
async fn a_vms_verbs_extend_it_show_its_history_and_jobs_ssh_to_it_and_archive_it() {
    let daemon = Daemon::start().await;
    let home = tempfile::tempdir().unwrap();
    let config = home.path();
    let key = home.path().join("id.pub");
    std::fs::write(&key, SSH_KEY).unwrap();
    let key = key.to_str().unwrap();
    let env = [
        ("PROVISIONING_URL", daemon.url.as_str()),
        ("PROVISIONING_TOKEN", daemon.admin_token.as_str()),
    ];

    let mut args = create("web", "small", key);
    args.extend(["--wait", "-o", "json"]);
    let created = cli(config, &env, &args, None).await.expect(0);
    let vm: Value = serde_json::from_str(&created.stdout).unwrap();
    let id = vm["id"].as_str().unwrap().to_owned();
    let before = vm["expires_at"].as_str().unwrap().to_owned();

    // More time: the expiry moves.
    let extended = cli(
        config,
        &env,
        &["vm", "extend", "web", "--hours", "2", "-o", "json"],
        None,
    )
    .await
    .expect(0);
    let extended: Value = serde_json::from_str(&extended.stdout).unwrap();
    assert_ne!(extended["expires_at"].as_str().unwrap(), before);

    // Its jobs: the create, ended well.
    let jobs = cli(config, &env, &["job", "list", "web"], None)
        .await
        .expect(0);
    assert!(jobs.stdout.starts_with("JOB"), "{jobs:#?}");
    assert!(
        jobs.stdout
            .lines()
            .any(|l| l.contains("create") && l.contains("succeeded")),
        "{jobs:#?}"
    );
    let job = cli(config, &env, &["job", "show", "web", "1"], None)
        .await
        .expect(0);
    assert!(job.stdout.contains("succeeded"), "{job:#?}");

    // A job that ended cannot be cancelled: one line saying why, exit 1.
    let refused = cli(config, &env, &["job", "cancel", "web", "1"], None)
        .await
        .expect(1);
    assert!(refused.stderr.starts_with("error: "), "{refused:#?}");
    assert_eq!(refused.stderr.lines().count(), 1, "{refused:#?}");

    // Its history: the events in order, Terraform's lines left out; and as it was at its
    // first event (requested, no address yet).
    let history = cli(config, &env, &["vm", "history", "web"], None)
        .await
        .expect(0);
    let requested = history.stdout.find("Requested").expect("Requested");
    let applied = history.stdout.find("Applied").expect("Applied");
    assert!(requested < applied, "{history:#?}");
    assert!(!history.stdout.contains("LogLine"), "{history:#?}");
    let events = cli(config, &env, &["vm", "history", "web", "-o", "json"], None)
        .await
        .expect(0);
    let events: Value = serde_json::from_str(&events.stdout).unwrap();
    let first = events[0]["recorded_at"].as_str().unwrap();
    let then = cli(
        config,
        &env,
        &["vm", "history", "web", "--at", first, "-o", "json"],
        None,
    )
    .await
    .expect(0);
    let then: Value = serde_json::from_str(&then.stdout).unwrap();
    assert_eq!(then["status"], "requested", "{then}");

    // ssh runs with the VM's address and the template's login user (an `ssh` that prints
    // what it was given stands in for the real one).
    let bin = home.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let fake = bin.join("ssh");
    std::fs::write(&fake, "#!/bin/sh\necho \"ssh $*\"\n").unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let mut with_path = env.to_vec();
    with_path.push(("PATH", path.as_str()));
    let ssh = cli(
        config,
        &with_path,
        &["vm", "ssh", "web", "-i", "/k", "--", "uptime"],
        None,
    )
    .await
    .expect(0);
    let ip = vm["ip"].as_str().unwrap();
    assert_eq!(
        ssh.stdout.trim(),
        format!("ssh -i /k ubuntu@{ip} uptime"),
        "{ssh:#?}"
    );

    // A refresh is a job of its own.
    cli(config, &env, &["vm", "refresh", "web"], None)
        .await
        .expect(0);
    let jobs = cli(config, &env, &["job", "list", "web", "-o", "json"], None)
        .await
        .expect(0);
    let jobs: Value = serde_json::from_str(&jobs.stdout).unwrap();
    assert!(
        jobs.as_array()
            .unwrap()
            .iter()
            .any(|j| j["action"] == "refresh"),
        "{jobs}"
    );

    // Destroyed, then archived: `vm list` leaves it out, `--all` shows it.
    cli(config, &env, &["vm", "destroy", &id, "--wait"], None)
        .await
        .expect(0);
    cli(config, &env, &["vm", "archive", "web"], None)
        .await
        .expect(0);
    let live = cli(config, &env, &["vm", "list", "-o", "json"], None)
        .await
        .expect(0);
    assert_eq!(live.stdout.trim(), "[]");
    let all = cli(config, &env, &["vm", "list", "--all", "-o", "json"], None)
        .await
        .expect(0);
    let all: Value = serde_json::from_str(&all.stdout).unwrap();
    assert_eq!(all[0]["archived"], true, "{all}");

    // A failed create retried with --wait fails again: exit 3 with the reason.
    cli(config, &env, &create("bad", "broken", key), None)
        .await
        .expect(0);
    wait_status(&daemon, "bad", "failed").await;
    let retried = cli(config, &env, &["vm", "retry", "bad", "--wait"], None)
        .await
        .expect(3);
    assert!(
        retried.stderr.contains("error: the create failed"),
        "{retried:#?}"
    );
}

/// Waits until the VM named `name` has `status` (as the admin sees it).
pub(crate) async fn wait_status(daemon: &Daemon, name: &str, status: &str) {
    for _ in 0..300 {
        let page = daemon.get("/api/v1/vms?archived=all").await;
        let found = page["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|vm| vm["name"] == name && vm["status"] == status);
        if found {
            return;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("{name} never became {status}");
}

#[tokio::test]
async fn ctrl_c_stops_waiting_without_cancelling_and_says_how_to_follow_again() {
    let daemon = Daemon::start().await;
    let home = tempfile::tempdir().unwrap();
    let config = home.path();
    let key = home.path().join("id.pub");
    std::fs::write(&key, SSH_KEY).unwrap();
    let key = key.to_str().unwrap();
    std::fs::create_dir_all(config.join("provisioning")).unwrap();
    let token = daemon.personal_token().await;
    cli(
        config,
        &[],
        &["login", &daemon.url, "--token"],
        Some(&token),
    )
    .await
    .expect(0);

    let mut args = create("slow", "small", key);
    args.push("--wait");
    let (child, mut lines) = start(config, &args);
    wait_for(&mut lines, |line| {
        line.contains("following its create job").then(String::new)
    })
    .await;
    let pid = child.id().unwrap().to_string();
    let status = std::process::Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap();
    assert!(status.success());
    let said = wait_for(&mut lines, |line| {
        line.contains("Stopped waiting").then(|| line.to_owned())
    })
    .await;
    assert!(said.contains("nothing was cancelled"), "{said}");
    assert!(said.contains("provisioning vm logs"), "{said}");
    let output = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(output.status.code(), Some(130));

    // The create goes on: it ends provisioned, never cancelled.
    wait_status(&daemon, "slow", "running").await;
}
