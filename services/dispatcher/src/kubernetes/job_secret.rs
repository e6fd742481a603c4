//! The Secret of a job's own: the keys the dispatcher makes for one job (its signing key,
//! and an install job's deploy key), which no Secret named in the provider registry can
//! hold. Named as the Job and owned by it like its ConfigMap, it reaches the pod through
//! `secretKeyRef`s, so that the Job's spec, its events and `kubectl describe` never show a
//! key; the ConfigMap never holds one either (the working directory has none).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{EnvVar, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use secrecy::ExposeSecret;

use super::manifest::{from_secret, labels, name, owned_by_job};
use super::KubernetesConfig;
use crate::Launch;

/// The item of the job's signing key (`RUNNER_SIGNING_KEY`).
pub const SIGNING_KEY_ITEM: &str = "signing-key";
/// The item of an install job's deploy key (`RUNNER_DEPLOY_KEY`); other jobs' Secrets have
/// none.
pub const DEPLOY_KEY_ITEM: &str = "deploy-key";

/// Each item of the Secret, with the runner's variable that reads it, and its value.
fn items(launch: &Launch) -> Vec<(&'static str, &'static str, String)> {
    let mut items = vec![(
        runner::env::SIGNING_KEY,
        SIGNING_KEY_ITEM,
        launch.signing_key.to_secret().expose_secret().to_owned(),
    )];
    if let Some(key) = &launch.deploy_key {
        items.push((
            runner::env::DEPLOY_KEY,
            DEPLOY_KEY_ITEM,
            key.expose_secret().to_owned(),
        ));
    }
    items
}

/// The runner's variables read from the Secret of Job `name`: references, no value.
pub fn env(launch: &Launch, name: &str) -> Vec<EnvVar> {
    items(launch)
        .into_iter()
        .map(|(var, item, _)| {
            let secret = registry::SecretRef {
                name: name.to_owned(),
                key: item.to_owned(),
            };
            from_secret(var, &secret)
        })
        .collect()
}

/// The Secret, owned by the Job whose uid is `job_uid` (from its create response), and
/// immutable: a redelivered job finds it as it was made, the keys being derived from the
/// job's and the VM's ids.
pub fn secret(launch: &Launch, config: &KubernetesConfig, job_uid: &str) -> Secret {
    let name = name(launch);
    let data = items(launch)
        .into_iter()
        .map(|(_, item, value)| (item.to_owned(), value))
        .collect::<BTreeMap<_, _>>();
    Secret {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            namespace: Some(config.namespace.clone()),
            labels: Some(labels(launch)),
            owner_references: Some(owned_by_job(name, job_uid)),
            ..Default::default()
        },
        string_data: Some(data),
        type_: Some("Opaque".into()),
        immutable: Some(true),
        ..Default::default()
    }
}
