//! Install jobs end to end: a real OpenSSH server stands for the VM (the `local` provider
//! gives it the address 127.0.0.1 through `TF_VAR_address`), the VM's deploy key comes from
//! its rendered cloud-init as a real VM would get it, its host key is pinned by the
//! phone-home callback, and a taskserv asked for through the API is installed by the
//! runner over SSH.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{json, Value};

use crate::helpers::{terraform_wrapper, try_spawn_app, TestApp};
use crate::wire::{Event, JobDetail, LogLine};

/// Generous: real Terraform and real ssh share the machine with other tests.
const WITHIN: Duration = Duration::from_secs(120);

/// An sshd on a free loopback port, its files in a folder of its own; stopped when dropped.
struct Sshd {
    dir: tempfile::TempDir,
    port: u16,
    child: Child,
}

impl Sshd {
    fn start() -> Sshd {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path();
        keygen(&path.join("host_key"));
        std::fs::write(path.join("authorized_keys"), "").unwrap();
        // sshd wants its privilege separation folder.
        std::fs::create_dir_all("/run/sshd").unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let config = format!(
            "Port {port}\nListenAddress 127.0.0.1\nHostKey {d}/host_key\n\
             AuthorizedKeysFile {d}/authorized_keys\nPidFile {d}/sshd.pid\nStrictModes no\n\
             UsePAM no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n\
             PubkeyAuthentication yes\nPermitRootLogin prohibit-password\n",
            d = path.display()
        );
        std::fs::write(path.join("sshd_config"), config).unwrap();
        let child = Command::new("/usr/sbin/sshd")
            .args(["-D", "-e", "-f"])
            .arg(path.join("sshd_config"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let sshd = Sshd { dir, port, child };
        for _ in 0..100 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return sshd;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("sshd did not listen on {port}");
    }

    fn host_key(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("host_key.pub")).unwrap()
    }

    fn authorize(&self, key: &str) {
        use std::io::Write;
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(self.dir.path().join("authorized_keys"))
            .unwrap();
        writeln!(file, "{key}").unwrap();
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn keygen(file: &Path) {
    let status = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", "host", "-f"])
        .arg(file)
        .status()
        .unwrap();
    assert!(status.success());
}

/// A catalog with one taskserv, `marker`: it writes `<dir>/marker` and appends a line to
/// `<dir>/runs.log` only when the marker is not there yet; healthy when the marker is; its
/// output names the marker.
fn catalog(root: &Path) -> PathBuf {
    let dir = root.join("taskservs");
    std::fs::create_dir_all(dir.join("marker")).unwrap();
    std::fs::write(
        dir.join("registry.toml"),
        "[[taskservs]]\nname = \"marker\"\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("marker/taskserv.ncl"),
        r#"{
  name = "marker",
  version = "1.0.0",
  description = "Writes a marker file (tests).",
  category = "test",
  os = ["debian", "ubuntu"],
  params = {
    dir = { type = 'string, description = "Where the marker goes" },
    hold = { type = 'number, default = 0, description = "Seconds to wait first" },
  },
  health.timeout_secs = 10,
}
"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("marker/install.sh.j2"),
        r#"#!/bin/bash
set -euo pipefail
dir={{ params.dir | sh }}
if [ {{ params.hold }} -gt 0 ]; then
  echo "holding"
  sleep {{ params.hold }}
fi
if [ "$(cat "$dir/marker" 2>/dev/null)" != "marker {{ taskserv.version }}" ]; then
  echo "marker {{ taskserv.version }}" >"$dir/marker"
  echo "changed" >>"$dir/runs.log"
  echo "marker written for {{ vm.user }}"
else
  echo "marker already in place"
fi
echo "marker_path=$dir/marker" >>"$TASKSERV_OUTPUTS"
"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("marker/health.sh.j2"),
        "#!/bin/bash\ngrep -qx 'marker {{ taskserv.version }}' {{ params.dir | sh }}/marker\n",
    )
    .unwrap();
    dir
}

/// The user data job 1 of `vm` rendered: what cloud-init on the VM would read.
fn user_data(app: &TestApp, vm: &str) -> String {
    let vars = app.work.path().join(vm).join("job-1/terraform.tfvars.json");
    let vars: Value = serde_json::from_slice(&std::fs::read(vars).unwrap()).unwrap();
    vars["user_data"].as_str().unwrap().to_owned()
}

/// The deploy key cloud-init authorizes for the VM's user.
fn deploy_key(user_data: &str) -> String {
    let line = user_data
        .lines()
        .find(|l| l.contains("provisioning-deploy"))
        .unwrap_or_else(|| panic!("no deploy key in {user_data}"));
    let quoted = line.trim().trim_start_matches("- ");
    serde_json::from_str(quoted).unwrap()
}

fn quoted_after(text: &str, marker: &str) -> String {
    let start = text.find(marker).unwrap_or_else(|| panic!("no {marker}")) + marker.len();
    let rest = &text[start..];
    rest[..rest.find('"').unwrap()].to_owned()
}

/// A `local` VM made by Terraform, booted by hand: its callbacks posted as cloud-init
/// would, phone-home carrying `host_key`; running once done.
async fn running_vm(app: &TestApp, sshd: &Sshd, name: &str, host_key: &str) -> String {
    let id = app.create_ok(json!({"name": name})).await;
    app.wait_for_status_within(&id, "provisioned", WITHIN).await;
    let user_data = user_data(app, &id);
    sshd.authorize(&deploy_key(&user_data));
    let client = reqwest::Client::new();
    let boot = quoted_after(&user_data, "status=boot_started\" \"");
    let phone_home = quoted_after(&user_data, "phone_home:\n  url: \"");
    let form = |body: String| {
        client
            .post(body.clone())
            .header("content-type", "application/x-www-form-urlencoded")
    };
    let answer = form(boot).body("status=boot_started").send().await.unwrap();
    assert_eq!(answer.status(), 204);
    let body = format!(
        "instance_id=i-1&hostname={name}&fqdn={name}&pub_key_ed25519={}",
        percent_encoding::utf8_percent_encode(host_key.trim(), percent_encoding::NON_ALPHANUMERIC)
    );
    let answer = form(phone_home).body(body).send().await.unwrap();
    assert_eq!(answer.status(), 204);
    let vm = app.wait_for_status_within(&id, "running", WITHIN).await;
    assert_eq!(vm.ip.as_deref(), Some("127.0.0.1"));
    id
}

/// Asks for `marker` on `vm` through the API, as a user would.
async fn install(app: &TestApp, vm: &str, marker_dir: &Path) {
    install_holding(app, vm, marker_dir, 0).await
}

/// As [`install`], the script waiting `hold` seconds before it writes anything.
async fn install_holding(app: &TestApp, vm: &str, marker_dir: &Path, hold: u32) {
    let body = json!({"taskservs": [
        {"name": "marker", "params": {"dir": marker_dir.display().to_string(), "hold": hold}}
    ]});
    let _: Value = app
        .post_json(&format!("/api/v1/vms/{vm}/taskservs"), &body, 202)
        .await;
}

/// Job `job` of `vm` once it ended (the read model may not know it at first).
async fn ended(app: &TestApp, vm: &str, job: u32) -> JobDetail {
    let until = std::time::Instant::now() + WITHIN;
    loop {
        let response = app
            .get(&format!("/api/v1/vms/{vm}/jobs/{job}"))
            .send()
            .await
            .unwrap();
        let detail = match response.status().as_u16() {
            200 => Some(response.json::<JobDetail>().await.unwrap()),
            _ => None,
        };
        if let Some(detail) = detail.as_ref().filter(|d| d.ended_at.is_some()) {
            return detail.clone();
        }
        assert!(
            std::time::Instant::now() < until,
            "job {job} did not end: {detail:?}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// The log lines of job `job` of `vm` once one says `line` (the read model may lag).
async fn logs_with(app: &TestApp, vm: &str, job: u32, line: &str) -> Vec<String> {
    let until = std::time::Instant::now() + WITHIN;
    loop {
        let lines: Vec<LogLine> = app
            .get_json(&format!("/api/v1/vms/{vm}/jobs/{job}/logs"))
            .await;
        let lines: Vec<String> = lines.into_iter().map(|l| l.message).collect();
        if lines.iter().any(|l| l.contains(line)) || std::time::Instant::now() > until {
            return lines;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

fn of_job(events: &[Event], job: u32) -> Vec<&Event> {
    events
        .iter()
        .filter(|e| e.kind.starts_with("Taskserv") && e.data["job_id"] == job)
        .collect()
}

#[tokio::test]
async fn an_install_job_runs_a_taskserv_over_ssh_on_the_pinned_host_key_only() {
    let sshd = Sshd::start();
    let files = tempfile::tempdir().unwrap();
    let wrapper = terraform_wrapper(files.path(), "export TF_VAR_address=127.0.0.1");
    let taskservs = catalog(files.path());
    let port = sshd.port;
    // The shipped cluster templates need the shipped taskservs: none here.
    let clusters = files.path().join("clusters");
    std::fs::create_dir_all(&clusters).unwrap();
    std::fs::write(clusters.join("registry.toml"), "").unwrap();
    let app = try_spawn_app(daemon::Roles::ALL, |config| {
        config.terraform_bin = wrapper;
        config.taskservs_dir = Some(taskservs);
        config.clusters_dir = Some(clusters);
        config.install.ssh_port = port;
    })
    .await
    .unwrap();
    let _: Value = app
        .send_json(
            "PATCH",
            "/api/v1/admin/templates/local/small",
            &json!({"username": "root"}),
            200,
        )
        .await;
    // The catalog's read model, which a create reads, follows.
    let until = std::time::Instant::now() + WITHIN;
    loop {
        let username: String = store::sqlx::query_scalar(
            "SELECT username FROM templates WHERE provider_id = 'local' AND id = 'small'",
        )
        .fetch_one(&app.pool)
        .await
        .unwrap();
        if username == "root" {
            break;
        }
        assert!(std::time::Instant::now() < until, "{username}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let marker_dir = files.path().join("vm");
    std::fs::create_dir_all(&marker_dir).unwrap();
    let runs = marker_dir.join("runs.log");

    let vm = running_vm(&app, &sshd, "ssh-1", &sshd.host_key()).await;
    install(&app, &vm, &marker_dir).await;
    let job = ended(&app, &vm, 2).await;
    let lines = logs_with(&app, &vm, 2, "[marker] marker written").await;
    assert_eq!(job.state, "succeeded", "{job:?} {lines:#?}");
    assert!(
        lines
            .iter()
            .any(|l| l == "[marker] marker written for root"),
        "{lines:#?}"
    );
    let events = app.events(&vm).await;
    let kinds: Vec<&str> = of_job(&events, 2).iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(
        kinds,
        ["TaskservsRequested", "TaskservStarted", "TaskservInstalled"]
    );
    let installed = of_job(&events, 2)[2];
    let marker = marker_dir.join("marker");
    assert_eq!(
        installed.data["outputs"],
        json!({"marker_path": marker.display().to_string()})
    );
    assert_eq!(std::fs::read_to_string(&runs).unwrap(), "changed\n");
    let written = std::fs::metadata(&marker).unwrap().modified().unwrap();
    let key = std::fs::read_to_string(app.work.path().join(&vm).join("job-2/known_hosts")).unwrap();
    assert!(
        !key.contains("PRIVATE"),
        "no private key in the install directory"
    );

    // Again: nothing changes, and it succeeds.
    install(&app, &vm, &marker_dir).await;
    let job = ended(&app, &vm, 3).await;
    assert_eq!(job.state, "succeeded", "{job:?}");
    let lines = logs_with(&app, &vm, 3, "[marker] marker already").await;
    assert!(
        lines
            .iter()
            .any(|l| l == "[marker] marker already in place"),
        "{lines:#?}"
    );
    assert_eq!(std::fs::read_to_string(&runs).unwrap(), "changed\n");
    assert_eq!(
        std::fs::metadata(&marker).unwrap().modified().unwrap(),
        written
    );

    // Cancelled while its script runs: the job ends cancelled, the script is stopped before
    // it wrote anything, and the VM stays running.
    std::fs::remove_file(&marker).unwrap();
    install_holding(&app, &vm, &marker_dir, 120).await;
    let lines = logs_with(&app, &vm, 4, "[marker] holding").await;
    assert!(lines.iter().any(|l| l == "[marker] holding"), "{lines:#?}");
    let _: Value = app
        .post_json(&format!("/api/v1/vms/{vm}/jobs/4/cancel"), &json!({}), 202)
        .await;
    let job = ended(&app, &vm, 4).await;
    assert_eq!(job.state, "cancelled", "{job:?}");
    assert!(!marker.exists(), "the script was stopped before it wrote");
    assert_eq!(std::fs::read_to_string(&runs).unwrap(), "changed\n");
    app.wait_for_status_within(&vm, "running", WITHIN).await;
    std::fs::write(&marker, "marker 1.0.0\n").unwrap();

    // A VM whose phone-home posted another host key: ssh refuses the server, nothing runs.
    let other = files.path().join("other_key");
    keygen(&other);
    let posted = std::fs::read_to_string(other.with_extension("pub")).unwrap();
    let vm2 = running_vm(&app, &sshd, "ssh-2", &posted).await;
    std::fs::remove_file(&marker).unwrap();
    install(&app, &vm2, &marker_dir).await;
    let job = ended(&app, &vm2, 2).await;
    assert_eq!(job.state, "failed", "{job:?}");
    let reason = job.reason.unwrap_or_default();
    assert!(reason.contains("host key"), "{reason}");
    assert!(reason.contains("marker"), "{reason}");
    assert!(!marker.exists(), "the script never ran");
    assert_eq!(std::fs::read_to_string(&runs).unwrap(), "changed\n");
    let events = app.events(&vm2).await;
    let failed = of_job(&events, 2)
        .into_iter()
        .find(|e| e.kind == "TaskservFailed")
        .expect("the step failed");
    assert_eq!(failed.data["exit_code"], 255);
    let lines = logs_with(&app, &vm2, 2, "Host key verification failed").await;
    assert!(
        lines
            .iter()
            .any(|l| l.contains("Host key verification failed")),
        "{lines:#?}"
    );

    // A VM that posted no host key at all: no install job is trusted to it.
    let vm3 = running_vm(&app, &sshd, "ssh-3", "").await;
    install(&app, &vm3, &marker_dir).await;
    let job = ended(&app, &vm3, 2).await;
    assert_eq!(job.state, "failed", "{job:?}");
    assert_eq!(
        job.reason.as_deref(),
        Some(dispatcher::install::NO_HOST_KEY),
        "{job:?}"
    );
    assert!(!marker.exists(), "the script never ran");
    assert_eq!(std::fs::read_to_string(&runs).unwrap(), "changed\n");
}
