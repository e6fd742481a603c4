//! The objects a job's runner is made of on Kubernetes, built without I/O: a batch/v1 Job
//! and the ConfigMap holding its working directory (the Secret holding its keys is
//! [`job_secret`]'s).

use std::collections::BTreeMap;

use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{
    Capabilities, ConfigMap, ConfigMapVolumeSource, Container, EmptyDirVolumeSource, EnvVar,
    EnvVarSource, KeyToPath, PodSpec, PodTemplateSpec, ResourceRequirements, SecretKeySelector,
    SecretVolumeSource, SecurityContext, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use k8s_openapi::ByteString;

use domain::provisioning::{JobId, VmId};

use super::{job_secret, KubernetesConfig, RunnerNatsAuth};
use crate::{ExecutorError, Launch};

/// Where the ConfigMap (read-only) is mounted; the runner copies it into [`WORKDIR`].
pub const SOURCE_DIR: &str = "/job";
/// The runner's working directory: an emptyDir, since Terraform writes `.terraform/` there.
pub const WORKDIR: &str = "/work";
/// Where the runner's NATS credentials file is mounted, when it has one.
pub const NATS_CREDS_DIR: &str = "/etc/provisioning/nats";
const NATS_CREDS_FILE: &str = "runner.creds";
/// Terraform needs time to stop cleanly (and release its state lock) when the pod is stopped.
pub const TERMINATION_GRACE_PERIOD_SECS: i64 = 120;

/// The name of the Job and of its ConfigMap: a DNS-1123 label, unique per (VM, job) since it
/// holds the whole VM id: `prov-<uuid>-<job>` is at most 5 + 36 + 1 + 10 = 52 characters.
pub fn name(launch: &Launch) -> String {
    name_of(launch.vm_id, launch.job_id)
}

/// [`name`] from the ids alone (a Job's labels).
pub fn name_of(vm: VmId, job: JobId) -> String {
    format!("prov-{vm}-{job}")
}

/// The labels every runner Job (and its pods) carries, as a label selector: what the watcher
/// and the reconciler list and watch.
pub const SELECTOR: &str =
    "app.kubernetes.io/name=provisioning-runner,app.kubernetes.io/part-of=provisioning";
/// The label holding the VM id of a Job (and of its pods).
pub const VM_LABEL: &str = "provisioning/vm-id";
/// The label holding the job number of a Job (and of its pods).
pub const JOB_LABEL: &str = "provisioning/job";

pub fn labels(launch: &Launch) -> BTreeMap<String, String> {
    [
        ("app.kubernetes.io/name", "provisioning-runner".to_owned()),
        ("app.kubernetes.io/part-of", "provisioning".to_owned()),
        (VM_LABEL, launch.vm_id.to_string()),
        (JOB_LABEL, launch.job_id.to_string()),
        ("provisioning/action", launch.action.as_str().to_owned()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect()
}

/// The runner's environment: the launch's, with the paths of the pod and this runner's name,
/// and each credential as a reference to its Secret. A credential's value is never read
/// here: nothing sent to the API server may hold one.
pub fn env(
    launch: &Launch,
    config: &KubernetesConfig,
    name: &str,
) -> Result<Vec<EnvVar>, ExecutorError> {
    let plain = |name: &str, value: String| EnvVar {
        name: name.to_owned(),
        value: Some(value),
        value_from: None,
    };
    // The daemon's Terraform path means nothing in the runner image, which has it on PATH.
    // The daemon's NATS URL may hold the daemon's NATS credentials: runners get their own.
    let overridden = [
        runner::env::NATS_URL,
        runner::env::WORKDIR,
        runner::env::SOURCE_DIR,
        runner::env::NAME,
        runner::env::TERRAFORM_BIN,
    ];
    let mut vars: Vec<EnvVar> = launch
        .env
        .iter()
        .filter(|(name, _)| !overridden.contains(&name.as_str()))
        .map(|(name, value)| plain(name, value.clone()))
        .collect();
    let nats_url = match &config.runner_nats_url {
        Some(url) => url.clone(),
        None => launch
            .env
            .iter()
            .find(|(name, _)| name == runner::env::NATS_URL)
            .map(|(_, url)| bus::without_credentials(url))
            .unwrap_or_default(),
    };
    vars.insert(0, plain(runner::env::NATS_URL, nats_url));
    vars.push(plain(runner::env::WORKDIR, WORKDIR.to_owned()));
    vars.push(plain(runner::env::SOURCE_DIR, SOURCE_DIR.to_owned()));
    vars.push(plain(
        runner::env::NAME,
        format!("kubernetes:{}/{name}", config.namespace),
    ));
    for credential in &launch.credentials {
        let secret = credential.secret.as_ref().ok_or_else(|| {
            ExecutorError(format!(
                "credential {} has no Kubernetes Secret: give it `secret = {{ name, key }}` in the provider registry",
                credential.name
            ))
        })?;
        vars.push(from_secret(&credential.name, secret));
    }
    // The job's own Secret: its keys are in no spec.
    vars.extend(job_secret::env(launch, name));
    match &config.runner_nats_auth {
        Some(RunnerNatsAuth::Password { user, password }) => {
            vars.push(plain(runner::env::NATS_USER, user.clone()));
            vars.push(from_secret(runner::env::NATS_PASSWORD, password));
        }
        Some(RunnerNatsAuth::CredentialsFile(_)) => vars.push(plain(
            runner::env::NATS_CREDS_FILE,
            format!("{NATS_CREDS_DIR}/{NATS_CREDS_FILE}"),
        )),
        None => {}
    }
    Ok(vars)
}

pub(super) fn from_secret(name: &str, secret: &registry::SecretRef) -> EnvVar {
    EnvVar {
        name: name.to_owned(),
        value: None,
        value_from: Some(EnvVarSource {
            secret_key_ref: Some(SecretKeySelector {
                name: secret.name.clone(),
                key: secret.key.clone(),
                optional: Some(false),
            }),
            ..Default::default()
        }),
    }
}

/// The volume and mount of the runner's NATS credentials file, when it has one.
fn nats_creds_volume(config: &KubernetesConfig) -> Option<(Volume, VolumeMount)> {
    let Some(RunnerNatsAuth::CredentialsFile(secret)) = &config.runner_nats_auth else {
        return None;
    };
    let volume = Volume {
        name: "nats-creds".into(),
        secret: Some(SecretVolumeSource {
            secret_name: Some(secret.name.clone()),
            items: Some(vec![KeyToPath {
                key: secret.key.clone(),
                path: NATS_CREDS_FILE.into(),
                // The default mode (0644): the runner is not root and the file is root's.
                mode: None,
            }]),
            ..Default::default()
        }),
        ..Default::default()
    };
    let mount = VolumeMount {
        name: "nats-creds".into(),
        mount_path: NATS_CREDS_DIR.into(),
        read_only: Some(true),
        ..Default::default()
    };
    Some((volume, mount))
}

pub fn job(launch: &Launch, config: &KubernetesConfig) -> Result<Job, ExecutorError> {
    let name = name(launch);
    let labels = labels(launch);
    let quantities = |pairs: [(&str, &str); 2]| {
        Some(
            pairs
                .into_iter()
                .map(|(k, v)| (k.to_owned(), Quantity(v.to_owned())))
                .collect(),
        )
    };
    let resources = &config.resources;
    let mut volume_mounts = vec![
        VolumeMount {
            name: "job".into(),
            mount_path: SOURCE_DIR.into(),
            read_only: Some(true),
            ..Default::default()
        },
        VolumeMount {
            name: "work".into(),
            mount_path: WORKDIR.into(),
            ..Default::default()
        },
    ];
    let mut volumes = vec![
        Volume {
            name: "job".into(),
            config_map: Some(ConfigMapVolumeSource {
                name: name.clone(),
                ..Default::default()
            }),
            ..Default::default()
        },
        Volume {
            name: "work".into(),
            empty_dir: Some(EmptyDirVolumeSource::default()),
            ..Default::default()
        },
    ];
    if let Some((volume, mount)) = nats_creds_volume(config) {
        volumes.push(volume);
        volume_mounts.push(mount);
    }
    let container = Container {
        name: "runner".into(),
        image: Some(config.runner_image.clone()),
        command: Some(vec!["provisioning-runner".into()]),
        env: Some(env(launch, config, &name)?),
        volume_mounts: Some(volume_mounts),
        resources: Some(ResourceRequirements {
            requests: quantities([
                ("cpu", &resources.cpu_request),
                ("memory", &resources.memory_request),
            ]),
            limits: quantities([
                ("cpu", &resources.cpu_limit),
                ("memory", &resources.memory_limit),
            ]),
            ..Default::default()
        }),
        security_context: Some(SecurityContext {
            allow_privilege_escalation: Some(false),
            run_as_non_root: Some(true),
            capabilities: Some(Capabilities {
                drop: Some(vec!["ALL".into()]),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    };
    Ok(Job {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            namespace: Some(config.namespace.clone()),
            labels: Some(labels.clone()),
            ..Default::default()
        },
        spec: Some(JobSpec {
            backoff_limit: Some(0),
            ttl_seconds_after_finished: Some(config.job_ttl_secs),
            // At least a second: Kubernetes refuses 0.
            active_deadline_seconds: Some(
                i64::try_from(launch.active_deadline.as_secs().max(1)).unwrap_or(i64::MAX),
            ),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels),
                    ..Default::default()
                }),
                spec: Some(PodSpec {
                    restart_policy: Some("Never".into()),
                    termination_grace_period_seconds: Some(TERMINATION_GRACE_PERIOD_SECS),
                    // The runner talks to NATS only, never to the API server.
                    automount_service_account_token: Some(false),
                    containers: vec![container],
                    volumes: Some(volumes),
                    ..Default::default()
                }),
            },
            ..Default::default()
        }),
        status: None,
    })
}

/// The ConfigMap of the working directory's files, owned by the Job (`uid` from its create
/// response) so that the garbage collector deletes it with the Job.
pub fn config_map(
    launch: &Launch,
    config: &KubernetesConfig,
    files: BTreeMap<String, Vec<u8>>,
    job_uid: &str,
) -> ConfigMap {
    let name = name(launch);
    let mut data = BTreeMap::new();
    let mut binary_data = BTreeMap::new();
    for (key, bytes) in files {
        match String::from_utf8(bytes) {
            Ok(text) => {
                data.insert(key, text);
            }
            Err(e) => {
                binary_data.insert(key, ByteString(e.into_bytes()));
            }
        }
    }
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            namespace: Some(config.namespace.clone()),
            labels: Some(labels(launch)),
            owner_references: Some(owned_by_job(name, job_uid)),
            ..Default::default()
        },
        data: Some(data),
        binary_data: (!binary_data.is_empty()).then_some(binary_data),
        immutable: Some(true),
    }
}

/// An ownerReference to the Job `name`: the garbage collector deletes what holds it with
/// the Job.
pub(super) fn owned_by_job(name: String, job_uid: &str) -> Vec<OwnerReference> {
    vec![OwnerReference {
        api_version: "batch/v1".into(),
        kind: "Job".into(),
        name,
        uid: job_uid.to_owned(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }]
}

/// The files of the working directory, by name. The directory is flat: a ConfigMap's keys
/// cannot hold a path. It never holds a key (an install job's deploy key goes in the job's
/// Secret, and the runner writes it outside its working directory): every file is sent.
pub async fn read_workdir(
    dir: &std::path::Path,
) -> Result<BTreeMap<String, Vec<u8>>, ExecutorError> {
    let io = |e: std::io::Error| ExecutorError(format!("{}: {e}", dir.display()));
    let mut files = BTreeMap::new();
    let mut entries = tokio::fs::read_dir(dir).await.map_err(io)?;
    while let Some(entry) = entries.next_entry().await.map_err(io)? {
        let key = entry.file_name().to_string_lossy().into_owned();
        if !entry.file_type().await.map_err(io)?.is_file() {
            return Err(ExecutorError(format!(
                "{}: {key} is not a file; a ConfigMap holds flat files only",
                dir.display()
            )));
        }
        if !key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        {
            return Err(ExecutorError(format!(
                "{}: {key:?} cannot be a ConfigMap key",
                dir.display()
            )));
        }
        files.insert(key, tokio::fs::read(entry.path()).await.map_err(io)?);
    }
    Ok(files)
}
