//! A cluster's secret in its nodes' cloud-init, and nowhere it should not be.

use std::io::Write;
use std::sync::{Arc, Mutex};

use bus::JobMessage;
use domain::cluster::{ClusterId, ClusterMember, RoleName};
use domain::provisioning::{JobAction, JobId, VmId};
use serde_json::Value;

use super::*;
use crate::workdir::tests::{config, job, provider, signer};

fn node(cluster: ClusterId, role: &str, index: u32) -> JobMessage {
    let mut job = job("local");
    job.vm_id = VmId::new();
    job.spec.cluster = Some(Box::new(ClusterMember {
        id: cluster,
        role: RoleName::parse(role).unwrap(),
        index,
    }));
    job
}

/// The job's user data, parsed.
fn user_data(job: &JobMessage) -> Value {
    let work = tempfile::tempdir().unwrap();
    let dir = crate::prepare(&config(work.path()), job, &provider("local")).unwrap();
    let vars: Value =
        serde_json::from_slice(&std::fs::read(dir.join("terraform.tfvars.json")).unwrap()).unwrap();
    serde_saphyr::from_str(vars["user_data"].as_str().unwrap()).expect("the user data is YAML")
}

/// The `write_files` entry of the cluster's secret, if any.
fn secret_file(doc: &Value) -> Option<Value> {
    doc["write_files"]
        .as_array()?
        .iter()
        .find(|f| f["path"] == PATH)
        .cloned()
}

#[test]
fn the_nodes_of_one_cluster_get_the_same_secret_and_another_cluster_another() {
    let cluster = ClusterId::new();
    let seed = secret_file(&user_data(&node(cluster, "seed", 0))).unwrap();
    let server = secret_file(&user_data(&node(cluster, "server", 1))).unwrap();
    assert_eq!(seed["content"], server["content"]);
    let expected = ClusterSecret::derive(&signer(), cluster);
    assert_eq!(seed["content"], expected.expose());

    let other = secret_file(&user_data(&node(ClusterId::new(), "seed", 0))).unwrap();
    assert_ne!(other["content"], seed["content"]);

    assert!(secret_file(&user_data(&job("local"))).is_none());
    assert!(!user_data(&job("local"))
        .to_string()
        .contains("provisioning/cluster"));
}

#[test]
fn the_secret_file_is_root_s_alone_and_written_before_the_taskservs_run() {
    let cluster = ClusterId::new();
    let mut job = crate::taskserv_boot::tests::job_with(&["k3s"]);
    job.spec.cluster = node(cluster, "seed", 0).spec.cluster;
    let work = tempfile::tempdir().unwrap();
    let mut config = config(work.path());
    config.taskservs = Some(crate::taskserv_boot::tests::catalog());
    let dir = crate::prepare(&config, &job, &provider("local")).unwrap();
    let vars: Value =
        serde_json::from_slice(&std::fs::read(dir.join("terraform.tfvars.json")).unwrap()).unwrap();
    let doc: Value = serde_saphyr::from_str(vars["user_data"].as_str().unwrap()).unwrap();
    let file = secret_file(&doc).unwrap();
    assert_eq!(file["permissions"], "0600");
    assert_eq!(file["owner"], "root:root");
    assert_eq!(file["content"].as_str().map(str::len), Some(64));
    // cloud-init writes `write_files` in its init stage and runs `runcmd` (run.sh, which
    // installs the taskservs) in its final stage: the file is there before k3s reads it.
    let runcmd = doc["runcmd"].as_array().unwrap();
    assert_eq!(
        runcmd.last().unwrap(),
        &serde_json::json!(["bash", crate::taskserv_boot::RUN_SH])
    );
    // Nor is it in the file the simulated boot reads.
    let steps = std::fs::read_to_string(dir.join(crate::taskserv_boot::CALLBACKS_FILE)).unwrap();
    assert!(!steps.contains(ClusterSecret::derive(&signer(), cluster).expose()));
}

#[test]
fn only_a_create_gets_the_secret_and_only_with_a_callback_key() {
    let cluster = ClusterId::new();
    let mut destroy = node(cluster, "seed", 0);
    destroy.action = JobAction::Destroy;
    destroy.job_id = JobId::new(2);
    assert!(secret_file(&user_data(&destroy)).is_none());

    let work = tempfile::tempdir().unwrap();
    let mut config = config(work.path());
    config.callbacks = None;
    let err = crate::prepare(&config, &node(cluster, "seed", 0), &provider("local")).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains(&format!("a node of cluster {cluster}")),
        "{text}"
    );
}

/// Log lines, kept in memory.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn the_secret_is_in_no_log_line_of_the_dispatcher() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || writer.clone())
        .finish();
    let cluster = ClusterId::new();
    let job = node(cluster, "seed", 0);
    let work = tempfile::tempdir().unwrap();
    tracing::subscriber::with_default(subscriber, || {
        // Every shipped taskserv: the user data is over 16 KiB, so the dispatcher logs its
        // warning about the size too.
        let mut config = config(work.path());
        config.taskservs = Some(crate::taskserv_boot::tests::catalog());
        let names: Vec<String> = config
            .taskservs
            .iter()
            .flat_map(|c| c.definitions().map(|d| d.name.to_string()))
            .filter(|n| n != "nginx")
            .collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let mut big = crate::taskserv_boot::tests::job_with(&names);
        big.spec.cluster = job.spec.cluster.clone();
        crate::prepare(&config, &big, &provider("local")).unwrap();
        config.callbacks = None;
        let _ = crate::prepare(&config, &job, &provider("local"));
    });
    let logs = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    let secret = ClusterSecret::derive(&signer(), cluster);
    assert!(logs.contains("over 16 KiB"), "the capture works: {logs}");
    assert!(!logs.contains(secret.expose()), "{logs}");
}
