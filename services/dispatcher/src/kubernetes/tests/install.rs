//! An install job on Kubernetes: the VM's deploy key travels in the Secret of the Job's
//! own, beside its signing key, and reaches the runner by reference alone.

use serde_json::{json, Value};

use super::start::{first_delivery, first_delivery_of, FirstDelivery};
use super::*;

fn env_var<'a>(job: &'a Value, name: &str) -> Option<&'a Value> {
    job["spec"]["template"]["spec"]["containers"][0]["env"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == name)
}

#[tokio::test]
async fn an_install_job_reads_its_deploy_key_by_reference_from_the_secret_of_its_job() {
    let FirstDelivery {
        result,
        job,
        secret,
        config_map,
        ..
    } = first_delivery_of(install_launch).await;
    assert_eq!(result.unwrap(), format!("kubernetes:provisioning/{NAME}"));
    assert_eq!(job["metadata"]["labels"]["provisioning/action"], "install");
    assert_eq!(
        env_var(&job, "RUNNER_DEPLOY_KEY"),
        Some(
            &json!({"name": "RUNNER_DEPLOY_KEY", "valueFrom": {"secretKeyRef": {
                "name": NAME, "key": "deploy-key", "optional": false,
            }}})
        )
    );
    assert_eq!(
        env_var(&job, "RUNNER_SIGNING_KEY").unwrap()["valueFrom"]["secretKeyRef"]["name"],
        NAME
    );
    assert_eq!(
        env_var(&job, "RUNNER_SECRET_ENV").unwrap()["value"],
        "RUNNER_DEPLOY_KEY,RUNNER_SIGNING_KEY"
    );

    let key = deploy_key();
    assert_eq!(secret["metadata"]["name"], NAME);
    assert_eq!(secret["immutable"], true);
    assert_eq!(
        secret["stringData"],
        json!({"signing-key": SIGNING_KEY, "deploy-key": key.private_pem()})
    );
    assert_eq!(secret["metadata"]["ownerReferences"][0]["uid"], UID);
    let files: Vec<&String> = config_map["data"].as_object().unwrap().keys().collect();
    assert_eq!(
        files,
        [
            "known_hosts",
            "plan.json",
            "step-0-health.sh",
            "step-0-install.sh"
        ]
    );
}

#[tokio::test]
async fn neither_the_job_nor_the_config_map_of_an_install_job_holds_its_deploy_key() {
    let FirstDelivery { result, texts, .. } = first_delivery_of(install_launch).await;
    result.unwrap();
    assert!(texts.contains("secretKeyRef"), "{texts}");
    let key = deploy_key();
    // JSON escapes the key's line breaks: look for each of its lines.
    let lines: Vec<&str> = key
        .private_pem()
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .collect();
    assert!(!lines.is_empty());
    for line in lines {
        assert!(
            !texts.contains(line),
            "the deploy key is in a spec: {texts}"
        );
    }
    assert!(!texts.contains("PRIVATE KEY"), "{texts}");
    assert!(!texts.contains(SIGNING_KEY), "{texts}");
}

#[tokio::test]
async fn a_create_job_s_secret_has_no_deploy_key_and_its_pod_no_such_variable() {
    let FirstDelivery {
        result,
        job,
        secret,
        ..
    } = first_delivery().await;
    result.unwrap();
    assert_eq!(secret["stringData"], json!({"signing-key": SIGNING_KEY}));
    assert!(env_var(&job, "RUNNER_DEPLOY_KEY").is_none());
}
