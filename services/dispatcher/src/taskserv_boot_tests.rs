use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use base64::Engine;
use domain::provisioning::{CallbackKind, JobAction, JobId};
use domain::taskservs::{TaskservName, TaskservRequest};
use serde_json::Value;
use taskservs::{Catalog, Target, VmFacts};

use super::*;
use crate::workdir::tests::{config, job, provider, signer};
use crate::WorkdirError;

/// The shipped catalog, loaded once (Nickel is slow to evaluate).
pub(crate) fn catalog() -> Arc<Catalog> {
    static CATALOG: OnceLock<Arc<Catalog>> = OnceLock::new();
    CATALOG
        .get_or_init(|| {
            let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../hcl/taskservs");
            Arc::new(Catalog::load(&dir).expect("the shipped catalog loads"))
        })
        .clone()
}

/// A create job on `local` whose plan is `names` resolved with the shipped catalog.
pub(crate) fn job_with(names: &[&str]) -> JobMessage {
    let mut job = job("local");
    let requests: Vec<_> = names
        .iter()
        .map(|n| TaskservRequest {
            name: TaskservName::parse(n).unwrap(),
            params: Default::default(),
        })
        .collect();
    let target = Target {
        provider: "local".into(),
        os: Some("debian".into()),
        cpu: 64,
        ram_gb: 256,
        disk_gb: 1000,
    };
    job.spec.taskservs = catalog().resolve(&requests, &target, &|_, _| true).unwrap();
    job
}

/// The working directory's user data, parsed, and its `taskserv_callbacks.json`.
fn prepared(job: &JobMessage, eessi: bool) -> (Value, Option<Vec<StepUrls>>) {
    let work = tempfile::tempdir().unwrap();
    let mut config = config(work.path());
    config.taskservs = Some(catalog());
    let mut provider = provider("local");
    provider.cloud_init.eessi = eessi;
    let dir = crate::prepare(&config, job, &provider).unwrap();
    let vars: Value =
        serde_json::from_slice(&std::fs::read(dir.join("terraform.tfvars.json")).unwrap()).unwrap();
    let user_data = vars["user_data"].as_str().unwrap();
    assert!(user_data.starts_with("#cloud-config\n"));
    let doc: Value = serde_saphyr::from_str(user_data).expect("the user data is YAML");
    (doc, read_steps(&dir))
}

/// `write_files`, by path, decoded.
fn files(doc: &Value) -> BTreeMap<String, (String, String)> {
    doc["write_files"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["encoding"] == "gz+b64")
        .map(|f| {
            let gzipped = base64::engine::general_purpose::STANDARD
                .decode(f["content"].as_str().unwrap())
                .unwrap();
            let mut text = String::new();
            std::io::Read::read_to_string(
                &mut flate2::read::GzDecoder::new(&gzipped[..]),
                &mut text,
            )
            .unwrap();
            (
                f["path"].as_str().unwrap().to_owned(),
                (f["permissions"].as_str().unwrap().to_owned(), text),
            )
        })
        .collect()
}

#[test]
fn a_create_with_two_taskservs_writes_their_scripts_and_runs_the_driver_after_everything_else() {
    let job = job_with(&["redis", "docker"]);
    let (doc, steps) = prepared(&job, true);
    let files = files(&doc);

    let facts = VmFacts {
        name: "web".into(),
        address: String::new(),
        user: "ubuntu".into(),
        provider: "local".into(),
    };
    let names: Vec<&str> = job.spec.taskservs.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["docker", "redis"], "registry order");
    for step in &job.spec.taskservs {
        let rendered = catalog().render(step, &facts, &BTreeMap::new()).unwrap();
        let dir = format!("/var/lib/provisioning/taskservs/{}", step.name);
        let install = &files[&format!("{dir}/install.sh")];
        let health = &files[&format!("{dir}/health.sh")];
        assert_eq!(install, &("0700".to_owned(), rendered.install));
        assert_eq!(health, &("0700".to_owned(), rendered.health));
    }
    let run = &files[RUN_SH].1;
    let at = |name: &str| run.find(&format!("\nrun_step {name} ")).unwrap();
    assert!(at("docker") < at("redis"), "plan order in run.sh");

    // Each step's URLs: signed for its index and kind, in run.sh and in the workdir's file.
    let steps = steps.expect("the working directory lists the steps' callbacks");
    let step_names: Vec<&str> = steps.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(step_names, names);
    let now = time::OffsetDateTime::now_utc();
    for (i, step) in steps.iter().enumerate() {
        for (url, kind) in [
            (&step.started, CallbackKind::TaskservStarted),
            (&step.installed, CallbackKind::TaskservInstalled),
            (&step.failed, CallbackKind::TaskservFailed),
        ] {
            let token = url
                .strip_prefix("https://vms.example.test/api/v1/callbacks/")
                .unwrap();
            let claims = signer().verify(token, now).unwrap();
            assert_eq!((claims.kind, usize::from(claims.step)), (kind, i));
            assert_eq!((claims.vm, claims.job), (job.vm_id, job.job_id));
            assert!(run.contains(&format!("'{url}'")), "run.sh has the URL");
        }
    }
    assert_eq!(steps[1].params["port"], 6379);
    // Each step's declared outputs, for the simulated boot to report.
    assert_eq!(steps[0].outputs, ["socket", "version"]);
    assert_eq!(steps[1].outputs, ["port"]);

    // EESSI's commands first, then curl, then the driver, last.
    let runcmd = doc["runcmd"].as_array().unwrap();
    assert_eq!(runcmd.len(), 4, "{runcmd:?}");
    assert!(runcmd[1].to_string().contains("cvmfs_config setup"));
    assert!(runcmd[2].to_string().contains("install -y curl"));
    assert_eq!(runcmd[3], serde_json::json!(["bash", RUN_SH]));
    // The others stay: the EESSI profile, the app's callbacks, phone home.
    let paths: Vec<&str> = doc["write_files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert!(paths.contains(&"/etc/profile.d/eessi_init.sh"), "{paths:?}");
    assert!(
        paths.contains(&"/etc/provisioning/callbacks.env"),
        "{paths:?}"
    );
    assert!(doc["phone_home"]["url"].is_string());
}

#[test]
fn without_eessi_the_driver_is_the_only_command_after_curl() {
    let (doc, _) = prepared(&job_with(&["redis"]), false);
    let runcmd = doc["runcmd"].as_array().unwrap();
    assert_eq!(runcmd.len(), 2, "{runcmd:?}");
    assert_eq!(runcmd[1], serde_json::json!(["bash", RUN_SH]));
    assert_eq!(files(&doc).len(), 3, "redis's two scripts and run.sh");
}

#[test]
fn a_create_without_taskservs_gets_no_driver_and_no_callbacks_file() {
    let (doc, steps) = prepared(&job("local"), false);
    assert!(steps.is_none());
    assert!(doc.get("runcmd").is_none(), "{doc}");
    assert!(!doc.to_string().contains("taskservs"), "{doc}");
}

#[test]
fn only_a_create_installs_taskservs_at_boot() {
    let mut job = job_with(&["redis"]);
    job.action = JobAction::Destroy;
    job.job_id = JobId::new(2);
    let composed = compose(&job, Some(&catalog()), None).unwrap();
    assert!(composed.files.is_empty() && composed.steps.is_empty());
}

#[test]
fn a_plan_without_a_catalog_fails_the_job_naming_its_first_taskserv() {
    let work = tempfile::tempdir().unwrap();
    let job = job_with(&["redis", "docker"]);
    let err = crate::prepare(&config(work.path()), &job, &provider("local")).unwrap_err();
    assert!(matches!(err, WorkdirError::Taskserv(_)), "{err:?}");
    let text = err.to_string();
    assert!(text.contains("taskserv docker"), "{text}");
    assert!(text.contains("PROVISIONING_TASKSERVS_DIR"), "{text}");
}

#[test]
fn a_step_that_does_not_render_fails_the_job_naming_it_and_no_url() {
    let work = tempfile::tempdir().unwrap();
    let mut job = job_with(&["redis"]);
    // A plan recorded without the param its template needs.
    job.spec.taskservs[0].params.remove("port");
    let mut config = config(work.path());
    config.taskservs = Some(catalog());
    let err = crate::prepare(&config, &job, &provider("local")).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("taskserv redis"), "{text}");
    assert!(!text.contains("callbacks/"), "{text}");
}

#[test]
fn a_large_plan_fits_in_the_user_data_aws_takes() {
    // A workstation's worth: containers, Kubernetes, dashboards, notebooks on EESSI, a
    // cache; EESSI's commands too. (User data grows by 1 to 2 KiB per taskserv: a plan of
    // every shipped taskserv is over AWS's 16 KiB, which the dispatcher logs.)
    let catalog = catalog();
    let names = [
        "docker",
        "k3s",
        "redis",
        "prometheus-node-exporter",
        "grafana",
        "jupyter",
        "eessi",
    ];
    let job = job_with(&names);
    let work = tempfile::tempdir().unwrap();
    let mut config = config(work.path());
    config.taskservs = Some(catalog.clone());
    let mut provider = provider("local");
    provider.cloud_init.eessi = true;
    let dir = crate::prepare(&config, &job, &provider).unwrap();
    let vars: Value =
        serde_json::from_slice(&std::fs::read(dir.join("terraform.tfvars.json")).unwrap()).unwrap();
    let size = vars["user_data"].as_str().unwrap().len();
    assert!(size < 16 * 1024, "{size} bytes");
}
