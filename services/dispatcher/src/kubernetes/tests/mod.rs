//! The executor against a scripted API server (`tower_test`), as kube-rs recommends: each
//! scenario awaits the calls it expects in order, and a missing call times the test out.
//! No cluster is involved: what a real API server does is what these scripts say it does.

mod install;
mod manifest;
mod start;
mod stop;
mod watch;

use std::time::Duration;

use domain::provisioning::{JobAction, JobId, VmId};
use http::{Method, Request, Response, StatusCode};
use kube::client::Body;
use serde_json::{json, Value};
use tower_test::mock::{self, Handle};

use super::{KubernetesConfig, KubernetesExecutor};
use crate::{Launch, LaunchCredential};

pub(super) type ApiServer = Handle<Request<Body>, Response<Body>>;

pub(super) const VM: &str = "0b9f4c1e-5a6d-4e2f-9c3b-7d8e1f2a3b4c";
pub(super) const NAME: &str = "prov-0b9f4c1e-5a6d-4e2f-9c3b-7d8e1f2a3b4c-3";
pub(super) const UID: &str = "5f1d0c9e-1111-2222-3333-444455556666";
pub(super) const PLANTED: &str = "planted-credential-value-7f3a";
pub(super) const JOBS: &str = "/apis/batch/v1/namespaces/provisioning/jobs";
pub(super) const CONFIG_MAPS: &str = "/api/v1/namespaces/provisioning/configmaps";
pub(super) const SECRETS: &str = "/api/v1/namespaces/provisioning/secrets";
/// The job's signing key in the launches of these tests (hex, as runners get it).
pub(super) const SIGNING_KEY: &str =
    "5151515151515151515151515151515151515151515151515151515151515151";

pub(super) fn executor() -> (KubernetesExecutor, ApiServer) {
    let (service, handle) = mock::pair::<Request<Body>, Response<Body>>();
    let client = kube::Client::new(service, "default");
    let config = KubernetesConfig {
        namespace: "provisioning".into(),
        job_ttl_secs: 600,
        ..KubernetesConfig::new("registry.example/provisioning-runner:1")
    };
    (KubernetesExecutor::new(client, config), handle)
}

pub(super) fn credential(name: &str, secret: Option<(&str, &str)>) -> LaunchCredential {
    LaunchCredential {
        name: name.into(),
        source: Some(format!("DAEMON_{name}")),
        // What the daemon may hold; the Kubernetes executor must never send it.
        value: Some(PLANTED.to_owned().into()),
        secret: secret.map(|(name, key)| registry::SecretRef {
            name: name.into(),
            key: key.into(),
        }),
    }
}

pub(super) fn launch(dir: &std::path::Path, credentials: Vec<LaunchCredential>) -> Launch {
    std::fs::write(
        dir.join("main.tf"),
        "resource \"null_resource\" \"vm\" {}\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("backend.tf"),
        "terraform {\n  backend \"pg\" {}\n}\n",
    )
    .unwrap();
    std::fs::write(dir.join("terraform.tfvars.json"), "{\"vm_name\": \"web\"}").unwrap();
    Launch {
        vm_id: VM.parse::<VmId>().unwrap(),
        job_id: JobId::new(3),
        action: JobAction::Create,
        provider: domain::provisioning::ProviderId::parse("nrec").unwrap(),
        env: vec![
            ("NATS_URL".into(), "nats://nats:4222".into()),
            (
                "RUNNER_WORKDIR".into(),
                "/var/lib/provisioning/jobs/x".into(),
            ),
            ("TERRAFORM_BIN".into(), "/usr/bin/terraform".into()),
            ("RUNNER_PUBLISH_RETRY_SECS".into(), "120".into()),
            (
                "RUNNER_SECRET_ENV".into(),
                "OS_PASSWORD,RUNNER_BACKEND_PASSWORD".into(),
            ),
        ],
        credentials,
        signing_key: bus::JobKey::parse(SIGNING_KEY).unwrap(),
        deploy_key: None,
        workdir: dir.to_owned(),
        active_deadline: std::time::Duration::from_secs(3610),
    }
}

/// The VM's deploy key in the install launches of these tests: a real one, so that its
/// text spans lines as an OpenSSH private key does.
pub(super) fn deploy_key() -> crate::deploy_key::DeployKey {
    let signer = domain::callbacks::CallbackSigner::new(vec![7; 32]).unwrap();
    crate::deploy_key::DeployKey::derive(&signer, VM.parse::<VmId>().unwrap())
}

/// An install job's launch: its install directory as the dispatcher writes it (no key in
/// it), no credential, the VM's deploy key.
pub(super) fn install_launch(dir: &std::path::Path) -> Launch {
    std::fs::write(
        dir.join("plan.json"),
        r#"{"target": {"address": "192.0.2.7", "port": 22, "user": "ubuntu"}, "steps": []}"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("known_hosts"),
        "192.0.2.7 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEpXvA+cP8hcraKOw+cO1rzIpAv7ms7vMYjhAKF7Qed/\n",
    )
    .unwrap();
    std::fs::write(dir.join("step-0-install.sh"), "apt-get install -y redis\n").unwrap();
    std::fs::write(dir.join("step-0-health.sh"), "redis-cli ping\n").unwrap();
    Launch {
        vm_id: VM.parse::<VmId>().unwrap(),
        job_id: JobId::new(3),
        action: JobAction::Install,
        provider: domain::provisioning::ProviderId::parse("nrec").unwrap(),
        env: vec![
            ("NATS_URL".into(), "nats://nats:4222".into()),
            (
                "RUNNER_WORKDIR".into(),
                "/var/lib/provisioning/jobs/x".into(),
            ),
            (
                "RUNNER_SECRET_ENV".into(),
                "RUNNER_DEPLOY_KEY,RUNNER_SIGNING_KEY".into(),
            ),
        ],
        credentials: vec![],
        signing_key: bus::JobKey::parse(SIGNING_KEY).unwrap(),
        deploy_key: Some(deploy_key().private),
        workdir: dir.to_owned(),
        active_deadline: std::time::Duration::from_secs(1810),
    }
}

pub(super) fn good_credentials() -> Vec<LaunchCredential> {
    vec![
        credential("OS_PASSWORD", Some(("nrec", "password"))),
        credential("RUNNER_BACKEND_PASSWORD", Some(("tf-backend", "password"))),
    ]
}

/// Awaits the next call, checks its method and path, and returns its body as JSON.
pub(super) async fn expect(
    server: &mut ApiServer,
    method: Method,
    path: &str,
) -> (
    Value,
    String,
    tower_test::mock::SendResponse<Response<Body>>,
) {
    let (request, send) = server
        .next_request()
        .await
        .expect("the service was not called");
    assert_eq!(request.method(), method);
    assert_eq!(request.uri().path(), path);
    let bytes = request.into_body().collect_bytes().await.unwrap();
    let text = String::from_utf8(bytes.to_vec()).unwrap();
    let body = if text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).unwrap()
    };
    (body, text, send)
}

pub(super) fn respond(
    send: tower_test::mock::SendResponse<Response<Body>>,
    status: StatusCode,
    body: Value,
) {
    send.send_response(
        Response::builder()
            .status(status)
            .body(Body::from(serde_json::to_vec(&body).unwrap()))
            .unwrap(),
    );
}

pub(super) fn already_exists(kind: &str) -> Value {
    json!({
        "kind": "Status", "apiVersion": "v1", "status": "Failure",
        "message": format!("{kind} \"{NAME}\" already exists"),
        "reason": "AlreadyExists", "code": 409,
    })
}

/// Echoes an object back as created, with a uid.
pub(super) fn created(mut object: Value, uid: &str) -> Value {
    object["metadata"]["uid"] = json!(uid);
    object
}

pub(super) async fn within_a_second<T>(scenario: tokio::task::JoinHandle<T>) -> T {
    tokio::time::timeout(Duration::from_secs(1), scenario)
        .await
        .expect("the scenario timed out: an expected call was not made")
        .expect("the scenario failed")
}
