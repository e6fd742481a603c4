//! The Job spec built from a launch and the executor's settings, without an API server.

use std::time::Duration;

use serde_json::{json, Value};

use super::*;
use crate::kubernetes::{manifest, RunnerNatsAuth};

fn job_json(launch: &Launch, config: &KubernetesConfig) -> Value {
    serde_json::to_value(manifest::job(launch, config).unwrap()).unwrap()
}

fn config() -> KubernetesConfig {
    KubernetesConfig {
        namespace: "provisioning".into(),
        ..KubernetesConfig::new("registry.example/provisioning-runner:1")
    }
}

fn env_of(job: &Value) -> Vec<Value> {
    job["spec"]["template"]["spec"]["containers"][0]["env"]
        .as_array()
        .unwrap()
        .clone()
}

fn var<'a>(env: &'a [Value], name: &str) -> Option<&'a Value> {
    env.iter().find(|v| v["name"] == name)
}

#[test]
fn the_active_deadline_follows_the_launch() {
    let dir = tempfile::tempdir().unwrap();
    let mut launch = launch(dir.path(), good_credentials());
    for (deadline, seconds) in [(3610, 3610), (900, 900), (0, 1)] {
        launch.active_deadline = Duration::from_secs(deadline);
        let job = job_json(&launch, &config());
        assert_eq!(job["spec"]["activeDeadlineSeconds"], seconds, "{deadline}");
    }
}

#[test]
fn a_runner_gets_the_daemon_nats_url_without_its_credentials_by_default() {
    let dir = tempfile::tempdir().unwrap();
    let mut launch = launch(dir.path(), good_credentials());
    launch.env[0].1 = "nats://provisioningd:daemon-secret@nats-0:4222,nats://nats-1:4222".into();
    let job = job_json(&launch, &config());
    let text = job.to_string();
    assert!(!text.contains("daemon-secret"), "{text}");
    assert!(!text.contains("provisioningd"), "{text}");
    let env = env_of(&job);
    assert_eq!(
        var(&env, "NATS_URL").unwrap()["value"],
        "nats://nats-0:4222,nats://nats-1:4222"
    );
    assert!(var(&env, "NATS_USER").is_none());

    let config = KubernetesConfig {
        runner_nats_url: Some("nats://nats.provisioning.svc:4222".into()),
        ..config()
    };
    let env = env_of(&job_json(&launch, &config));
    assert_eq!(
        var(&env, "NATS_URL").unwrap()["value"],
        "nats://nats.provisioning.svc:4222"
    );
}

#[test]
fn a_runner_nats_user_comes_with_a_secret_reference_and_no_password() {
    let dir = tempfile::tempdir().unwrap();
    let launch = launch(dir.path(), good_credentials());
    let config = KubernetesConfig {
        runner_nats_auth: Some(RunnerNatsAuth::Password {
            user: "runner".into(),
            password: registry::SecretRef {
                name: "nats-users".into(),
                key: "runner-password".into(),
            },
        }),
        ..config()
    };
    let job = job_json(&launch, &config);
    let env = env_of(&job);
    assert_eq!(
        var(&env, "NATS_USER"),
        Some(&json!({"name": "NATS_USER", "value": "runner"}))
    );
    assert_eq!(
        var(&env, "NATS_PASSWORD"),
        Some(
            &json!({"name": "NATS_PASSWORD", "valueFrom": {"secretKeyRef": {
                "name": "nats-users", "key": "runner-password", "optional": false,
            }}})
        )
    );
    assert!(!job.to_string().contains(PLANTED));
}

#[test]
fn a_runner_nats_credentials_file_is_a_mounted_secret_and_no_value() {
    let dir = tempfile::tempdir().unwrap();
    let launch = launch(dir.path(), good_credentials());
    let config = KubernetesConfig {
        runner_nats_auth: Some(RunnerNatsAuth::CredentialsFile(registry::SecretRef {
            name: "nats-runner".into(),
            key: "runner.creds".into(),
        })),
        ..config()
    };
    let job = job_json(&launch, &config);
    let pod = &job["spec"]["template"]["spec"];
    assert_eq!(
        pod["volumes"][2],
        json!({"name": "nats-creds", "secret": {
            "secretName": "nats-runner",
            "items": [{"key": "runner.creds", "path": "runner.creds"}],
        }})
    );
    assert_eq!(
        pod["containers"][0]["volumeMounts"][2],
        json!({"name": "nats-creds", "mountPath": "/etc/provisioning/nats", "readOnly": true})
    );
    let env = env_of(&job);
    assert_eq!(
        var(&env, "NATS_CREDS_FILE").unwrap()["value"],
        "/etc/provisioning/nats/runner.creds"
    );
    assert!(var(&env, "NATS_PASSWORD").is_none());
}
