//! The working directory of a job: the provider's Terraform files, the `pg` backend and
//! the job's variables. No credential is written here.

use std::path::{Path, PathBuf};

use bus::JobMessage;
use domain::provisioning::CallbackKind;
use serde_json::json;

use crate::DispatcherConfig;

#[derive(Debug, thiserror::Error)]
pub enum WorkdirError {
    #[error("provider {provider:?}: {source}")]
    Folders {
        provider: String,
        source: registry::FolderError,
    },
    /// A taskserv of the plan could not be rendered, or there is no catalog to render it.
    #[error("could not prepare the VM's taskservs: {0}")]
    Taskserv(#[from] crate::taskserv_boot::TaskservError),
    /// A cluster's node needs its cluster's secret, which is derived from the callback key.
    #[error("the VM is a node of cluster {cluster}, whose secret is derived from the callback key: no callback key is configured")]
    NoClusterKey { cluster: domain::cluster::ClusterId },
    #[error("could not render cloud-init: {0}")]
    CloudInit(#[from] askama::Error),
    #[error("could not encode the job's variables: {0}")]
    Variables(#[from] serde_json::Error),
    #[error("could not prepare {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The backend block every job gets: state in Postgres, one workspace per VM (selected by
/// the runner with `TF_WORKSPACE`).
const BACKEND: &str = r#"# Written by the dispatcher: Terraform state lives in Postgres, one workspace per VM.
terraform {
  backend "pg" {}
}
"#;

/// Makes `<work_dir>/<vm_id>/job-<n>/` afresh and returns it.
pub fn prepare(
    config: &DispatcherConfig,
    job: &JobMessage,
    provider: &registry::Provider,
) -> Result<PathBuf, WorkdirError> {
    let files = provider
        .files(&config.hcl_dir)
        .map_err(|source| WorkdirError::Folders {
            provider: job.spec.provider.as_str().to_owned(),
            source,
        })?;
    let dir = config
        .work_dir
        .join(job.vm_id.to_string())
        .join(format!("job-{}", job.job_id));
    let io = |path: &Path| {
        let path = path.to_owned();
        move |source| WorkdirError::Io { path, source }
    };
    if dir.exists() {
        std::fs::remove_dir_all(&dir).map_err(io(&dir))?;
    }
    copy_flat(&files, &dir)?;
    std::fs::write(dir.join("backend.tf"), BACKEND).map_err(io(&dir))?;
    let tfvars = dir.join("terraform.tfvars.json");
    let urls = crate::cloud_init::urls(job, config.callbacks.as_ref());
    // The VM's deploy key goes with its callbacks: both come from the callback key.
    let deploy_key = match (&config.callbacks, urls.is_empty()) {
        (Some(callbacks), false) => {
            crate::deploy_key::DeployKey::derive(&callbacks.signer, job.vm_id).public
        }
        _ => String::new(),
    };
    let taskservs =
        crate::taskserv_boot::compose(job, config.taskservs.as_deref(), config.callbacks.as_ref())?;
    let cluster_secret = crate::cluster_secret::for_job(job, config.callbacks.as_ref())?;
    let user_data = crate::cloud_init::render(
        job,
        &provider.cloud_init,
        &urls,
        &deploy_key,
        &taskservs.files,
        cluster_secret.as_ref(),
    )?;
    if user_data.len() > USER_DATA_WARN {
        tracing::warn!(
            bytes = user_data.len(),
            taskservs = taskservs.steps.len(),
            "the VM's cloud-init user data is over 16 KiB: AWS refuses more"
        );
    }
    let vars = variables(job, &user_data, &urls);
    std::fs::write(&tfvars, serde_json::to_vec_pretty(&vars)?).map_err(io(&tfvars))?;
    if !taskservs.steps.is_empty() {
        let file = dir.join(crate::taskserv_boot::CALLBACKS_FILE);
        std::fs::write(&file, serde_json::to_vec_pretty(&taskservs.steps)?).map_err(io(&file))?;
    }
    Ok(dir)
}

/// The largest user data AWS takes (16 KiB); others take more (OpenStack 64 KiB).
const USER_DATA_WARN: usize = 16 * 1024;

/// The common variables every provider declares (`registry::COMMON_VARIABLES`).
pub fn variables(
    job: &JobMessage,
    user_data: &str,
    urls: &[(CallbackKind, String)],
) -> serde_json::Value {
    let spec = &job.spec;
    let url = |kind| {
        urls.iter()
            .find(|(k, _)| *k == kind)
            .map_or("", |(_, u)| u.as_str())
    };
    json!({
        "vm_id": job.vm_id.to_string(),
        // The templates use it as the host name and in resource names: the DNS-safe form.
        "vm_name": spec.name.host_name().as_str(),
        "public_key": spec.ssh_public_key.as_str(),
        "image_name": spec.image_name,
        "flavor_name": spec.flavor_name,
        "allow_ssh_from_v4": spec.allow_ssh_from.iter().map(|c| c.to_string()).collect::<Vec<_>>(),
        "duration_hours": spec.duration_hours.get(),
        "username": spec.username,
        "user_data": user_data,
        "boot_callback_url": url(CallbackKind::BootStarted),
        "phone_home_url": url(CallbackKind::PhoneHome),
    })
}

/// Copies the files of all the provider's folders into `to`, flat (see `registry::flat_files`).
fn copy_flat(files: &[registry::SourceFile], to: &Path) -> Result<(), WorkdirError> {
    let io = |path: &Path| {
        let path = path.to_owned();
        move |source| WorkdirError::Io { path, source }
    };
    std::fs::create_dir_all(to).map_err(io(to))?;
    for file in files {
        std::fs::copy(&file.path, to.join(&file.name)).map_err(io(&file.path))?;
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use domain::provisioning::*;

    pub(crate) fn job(provider: &str) -> JobMessage {
        JobMessage {
            vm_id: VmId::new(),
            job_id: JobId::FIRST,
            action: JobAction::Create,
            spec: VmSpec {
                name: VmName::parse("web").unwrap(),
                provider: ProviderId::parse(provider).unwrap(),
                template: TemplateId::parse("small").unwrap(),
                image_name: "debian-12".into(),
                flavor_name: "local.small".into(),
                ssh_public_key: SshPublicKey::parse("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEpXvA+cP8hcraKOw+cO1rzIpAv7ms7vMYjhAKF7Qed/ t@e").unwrap(),
                allow_ssh_from: vec![Cidr::parse("192.0.2.0/24").unwrap()],
                duration_hours: DurationHours::parse(4).unwrap(),
        username: "ubuntu".into(),
                owner: domain::identity::UserId::BUILTIN_ADMIN,
                taskservs: vec![],
                cluster: None,
            },
        }
    }

    pub(crate) fn provider(folder: &str) -> registry::Provider {
        registry::Provider {
            id: "local".into(),
            name: "Local".into(),
            folders: vec!["common".into(), folder.into()],
            enabled: true,
            regions: vec![],
            cloud_init: registry::CloudInit {
                create_user: true,
                eessi: false,
            },
            credentials: vec![],
        }
    }

    pub(crate) fn config(work: &Path) -> DispatcherConfig {
        let hcl_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../hcl");
        DispatcherConfig {
            registry: std::sync::Arc::new(registry::Registry {
                hcl_dir: hcl_dir.clone(),
                providers: vec![provider("local")],
            }),
            credentials: Default::default(),
            hcl_dir,
            work_dir: work.to_owned(),
            nats_url: String::new(),
            runner_nats_user: None,
            backend_conn_str: String::new(),
            backend_password: Some("hunter2-secret".to_owned().into()),
            backend_secret: None,
            terraform_bin: "terraform".into(),
            publish_retry: std::time::Duration::from_secs(300),
            job_limits: Default::default(),
            callbacks: Some(crate::cloud_init::CallbackUrls {
                public_url: "https://vms.example.test/".into(),
                signer: std::sync::Arc::new(signer()),
                ttl: std::time::Duration::from_secs(600),
            }),
            taskservs: None,
            install_scripts: None,
            ssh_port: 22,
        }
    }

    pub(crate) fn signer() -> domain::callbacks::CallbackSigner {
        domain::callbacks::CallbackSigner::new(vec![7; 32]).unwrap()
    }

    #[test]
    fn a_create_job_gets_signed_callback_urls_for_its_vm_and_kind() {
        let work = tempfile::tempdir().unwrap();
        let job = job("local");
        let dir = prepare(&config(work.path()), &job, &provider("local")).unwrap();
        let vars: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join("terraform.tfvars.json")).unwrap())
                .unwrap();
        let now = time::OffsetDateTime::now_utc();
        let url = vars["phone_home_url"].as_str().unwrap();
        let token = url
            .strip_prefix("https://vms.example.test/api/v1/callbacks/")
            .unwrap();
        let claims = signer().verify(token, now).unwrap();
        assert_eq!((claims.vm, claims.job), (job.vm_id, job.job_id));
        assert_eq!(claims.kind, CallbackKind::PhoneHome);
        let ttl = claims.expires - now.unix_timestamp();
        assert!((595..=600).contains(&ttl), "{ttl}");
        let user_data = vars["user_data"].as_str().unwrap();
        assert!(
            user_data.contains(&format!("url: \"{url}\"")),
            "{user_data}"
        );
        let boot = vars["boot_callback_url"].as_str().unwrap();
        assert!(user_data.contains(boot), "{user_data}");
        assert!(user_data.contains("APP_READY_URL=\"https://vms.example.test/api/v1/callbacks/"));
        // A destroy job's VM does not boot: no callbacks.
        let destroy = JobMessage {
            action: JobAction::Destroy,
            job_id: JobId::new(2),
            ..job
        };
        let dir = prepare(&config(work.path()), &destroy, &provider("local")).unwrap();
        let vars: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join("terraform.tfvars.json")).unwrap())
                .unwrap();
        assert_eq!(vars["phone_home_url"], "");
    }

    #[test]
    fn every_runner_is_told_how_long_to_retry_its_reports() {
        let work = tempfile::tempdir().unwrap();
        let mut config = config(work.path());
        config.publish_retry = std::time::Duration::from_secs(42);
        let env = crate::runner_env(&config, "p", &job("local"), work.path(), String::new());
        let retry: Vec<_> = env
            .iter()
            .filter(|(name, _)| name == runner::env::PUBLISH_RETRY_SECS)
            .map(|(_, value)| value.as_str())
            .collect();
        assert_eq!(retry, ["42"]);
    }

    #[test]
    fn the_working_directory_holds_the_provider_files_the_backend_and_the_variables() {
        let work = tempfile::tempdir().unwrap();
        let job = job("local");
        let dir = prepare(&config(work.path()), &job, &provider("local")).unwrap();
        assert!(dir.ends_with(format!("{}/job-1", job.vm_id)));
        assert!(dir.join("variables.tf").is_file());
        assert!(std::fs::read_to_string(dir.join("backend.tf"))
            .unwrap()
            .contains("backend \"pg\""));
        let vars: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join("terraform.tfvars.json")).unwrap())
                .unwrap();
        assert_eq!(vars["vm_id"], job.vm_id.to_string());
        assert_eq!(vars["allow_ssh_from_v4"], json!(["192.0.2.0/24"]));
        assert_eq!(vars["flavor_name"], "local.small");
        assert!(vars["user_data"]
            .as_str()
            .unwrap()
            .starts_with("#cloud-config"));
        let mut names: Vec<&str> = vars
            .as_object()
            .unwrap()
            .keys()
            .map(|k| k.as_str())
            .collect();
        let mut common = registry::COMMON_VARIABLES.to_vec();
        names.sort();
        common.sort();
        assert_eq!(names, common, "every common variable, and only those");
        let all = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap_or_default())
            .collect::<String>();
        assert!(
            !all.contains("hunter2-secret"),
            "no credential is written to the working directory"
        );
    }

    #[test]
    fn the_templates_get_the_host_name_derived_from_the_display_name() {
        let mut job = job("local");
        job.spec.name = VmName::parse("My_VM.1").unwrap();
        let vars = variables(&job, "#cloud-config\n", &[]);
        assert_eq!(vars["vm_name"], "my-vm-1");
        let user_data =
            crate::cloud_init::render(&job, &provider("local").cloud_init, &[], "", &[], None)
                .unwrap();
        assert!(user_data.contains("\nhostname: my-vm-1\n"), "{user_data}");
        assert!(!user_data.contains("My_VM.1"), "{user_data}");
    }

    #[test]
    fn a_provider_without_a_folder_is_refused_by_name() {
        let work = tempfile::tempdir().unwrap();
        let err = prepare(&config(work.path()), &job("local"), &provider("nowhere")).unwrap_err();
        assert!(err.to_string().contains("nowhere"), "{err}");
    }

    #[tokio::test]
    async fn the_working_directory_and_its_config_map_hold_the_files_of_all_the_providers_folders()
    {
        let work = tempfile::tempdir().unwrap();
        let mut nrec_uio = provider("nrec-uio");
        nrec_uio.folders = ["common", "openstack", "nrec-uio"].map(String::from).into();
        let dir = prepare(&config(work.path()), &job("nrec-uio"), &nrec_uio).unwrap();
        let hcl = config(work.path()).hcl_dir;
        let read = |path: std::path::PathBuf| std::fs::read_to_string(path).unwrap();
        for (file, folder) in [
            ("common_variables.tf", "common"),
            ("main.tf", "openstack"),
            ("variables.tf", "openstack"),
            ("outputs.tf", "openstack"),
            ("versions.tf", "openstack"),
            ("project.tf", "nrec-uio"),
        ] {
            assert_eq!(
                read(dir.join(file)),
                read(hcl.join(folder).join(file)),
                "{file}"
            );
        }
        let files = crate::kubernetes::manifest::read_workdir(&dir)
            .await
            .unwrap();
        let keys: Vec<&str> = files.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "backend.tf",
                "common_variables.tf",
                "main.tf",
                "outputs.tf",
                "project.tf",
                "terraform.tfvars.json",
                "variables.tf",
                "versions.tf"
            ],
            "the ConfigMap holds every file, flat"
        );
    }
}
