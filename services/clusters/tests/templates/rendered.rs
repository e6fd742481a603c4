//! Every node of every shipped template, its references rendered as the coordinator will,
//! resolves into a plan whose scripts pass `shellcheck`.

use std::collections::BTreeMap;
use std::fs;
use std::process::Command;

use clusters::references_in;
use domain::taskservs::TaskservRequest;
use taskservs::{Target, VmFacts};

use super::{shipped, taskservs};

/// A reference's value as a node would report it: its key's sample.
fn render_references(value: &serde_json::Value) -> serde_json::Value {
    let Some(text) = value.as_str() else {
        return value.clone();
    };
    let mut out = text.to_owned();
    for reference in references_in(text).unwrap() {
        let sample = match reference.key.as_str() {
            "server_url" => "https://192.0.2.10:6443",
            "client_url" => "http://192.0.2.10:2379",
            "host" => "192.0.2.10",
            other => panic!("no sample for output {other}"),
        };
        let start = out.find("{{").unwrap();
        let end = out[start..].find("}}").unwrap() + start + 2;
        out.replace_range(start..end, sample);
    }
    serde_json::Value::String(out)
}

fn shellcheck(label: &str, script: &str) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("script.sh");
    fs::write(&path, script).unwrap();
    let out = Command::new("/usr/bin/shellcheck")
        .arg(&path)
        .output()
        .unwrap_or_else(|e| panic!("shellcheck is needed at /usr/bin/shellcheck: {e}"));
    assert!(
        out.status.success(),
        "{label} fails shellcheck:\n{}\n{script}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn every_nodes_scripts_render_with_references_filled_and_pass_shellcheck() {
    let catalog = taskservs();
    let target = Target {
        provider: "openstack".into(),
        os: Some("ubuntu".into()),
        cpu: 8,
        ram_gb: 16,
        disk_gb: 80,
    };
    let facts = VmFacts {
        name: "node-1".into(),
        address: "192.0.2.11".into(),
        user: "ubuntu".into(),
        provider: "openstack".into(),
    };
    for template in shipped().templates() {
        for role in &template.roles {
            let requests: Vec<TaskservRequest> = role
                .taskservs
                .iter()
                .map(|used| TaskservRequest {
                    name: used.name.clone(),
                    params: used
                        .params
                        .iter()
                        .map(|(k, v)| (k.clone(), render_references(v)))
                        .collect(),
                })
                .collect();
            let plan = catalog
                .resolve(&requests, &target, &|_, _| true)
                .unwrap_or_else(|r| panic!("{}/{}: {r}", template.name, role.name));
            for step in &plan {
                let rendered = catalog
                    .render(step, &facts, &BTreeMap::new())
                    .unwrap_or_else(|e| panic!("{e}"));
                let label = format!("{}/{}/{}", template.name, role.name, step.name);
                assert!(!rendered.install.contains("{{"), "{label}");
                shellcheck(&format!("{label}/install.sh"), &rendered.install);
                shellcheck(&format!("{label}/health.sh"), &rendered.health);
            }
        }
    }
}
