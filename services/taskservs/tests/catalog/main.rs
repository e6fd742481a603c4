//! The shipped catalog (`hcl/taskservs`) and definitions in files: loading through Nickel,
//! rendering, and `shellcheck` on every script a VM would run.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use domain::taskservs::{TaskservName, TaskservRequest};
use taskservs::{driver, Catalog, StepCallbacks, Target, VmFacts};

mod docs_example;
mod outputs;
mod run_sh;

fn shipped() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../hcl/taskservs")
}

fn facts() -> VmFacts {
    VmFacts {
        name: "lab-1".into(),
        address: "192.0.2.10".into(),
        user: "ubuntu".into(),
        provider: "openstack".into(),
    }
}

fn big_ubuntu() -> Target {
    Target {
        provider: "openstack".into(),
        os: Some("ubuntu".into()),
        cpu: 16,
        ram_gb: 64,
        disk_gb: 200,
    }
}

/// Runs shellcheck on `script`; the binary must be there (a missing one fails the test).
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
fn every_shipped_taskserv_loads_renders_with_its_defaults_and_passes_shellcheck() {
    let catalog = Catalog::load(&shipped()).unwrap();
    let names: Vec<&str> = catalog.definitions().map(|d| d.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "docker",
            "k3s",
            "postgresql",
            "etcd",
            "redis",
            "prometheus-node-exporter",
            "grafana",
            "jupyter",
            "eessi",
            "nginx"
        ]
    );
    for def in catalog.definitions() {
        let request = TaskservRequest {
            name: def.name.clone(),
            params: Default::default(),
        };
        let plan = catalog
            .resolve(&[request], &big_ubuntu(), &|_, _| true)
            .unwrap_or_else(|r| panic!("{r}"));
        let step = plan.iter().find(|s| s.name == def.name).unwrap();
        let rendered = catalog
            .render(step, &facts(), &BTreeMap::new())
            .unwrap_or_else(|e| panic!("{e}"));
        shellcheck(&format!("{}/install.sh", def.name), &rendered.install);
        shellcheck(&format!("{}/health.sh", def.name), &rendered.health);
    }
}

#[test]
fn a_grafana_request_pulls_in_docker_and_the_node_exporter_first() {
    let catalog = Catalog::load(&shipped()).unwrap();
    let request = TaskservRequest {
        name: TaskservName::parse("grafana").unwrap(),
        params: Default::default(),
    };
    let plan = catalog
        .resolve(&[request], &big_ubuntu(), &|_, _| true)
        .unwrap();
    let names: Vec<&str> = plan.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["docker", "prometheus-node-exporter", "grafana"]);
}

#[test]
fn the_driver_writes_each_steps_scripts_and_a_run_sh_that_passes_shellcheck() {
    let catalog = Catalog::load(&shipped()).unwrap();
    let requests: Vec<_> = ["jupyter", "k3s"]
        .iter()
        .map(|n| TaskservRequest {
            name: TaskservName::parse(n).unwrap(),
            params: Default::default(),
        })
        .collect();
    let plan = catalog
        .resolve(&requests, &big_ubuntu(), &|_, _| true)
        .unwrap();
    let rendered: Vec<_> = plan
        .iter()
        .map(|s| catalog.render(s, &facts(), &BTreeMap::new()).unwrap())
        .collect();
    let secret = "https://api.example/v1/callbacks/tok'en-SECRET";
    let callbacks = vec![
        StepCallbacks {
            started: format!("{secret}/started"),
            installed: format!("{secret}/installed"),
            failed: format!("{secret}/failed"),
        },
        StepCallbacks::default(),
    ];
    let files = driver(&plan, &rendered, &callbacks);
    let paths: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "/var/lib/provisioning/taskservs/k3s/install.sh",
            "/var/lib/provisioning/taskservs/k3s/health.sh",
            "/var/lib/provisioning/taskservs/jupyter/install.sh",
            "/var/lib/provisioning/taskservs/jupyter/health.sh",
            "/var/lib/provisioning/taskservs/run.sh",
        ]
    );
    assert!(files.iter().all(|f| f.permissions == "0700"));
    let run = &files[4].content;
    shellcheck("run.sh", run);
    assert!(!run.contains("set -x"));
    assert!(
        run.contains(
            "run_step k3s retry 2 180 'https://api.example/v1/callbacks/tok%27en-SECRET/started'"
        ),
        "{run}"
    );
    assert!(
        run.contains("run_step jupyter retry 1 120 '' '' '' || exit 1"),
        "{run}"
    );
}

#[test]
fn a_missing_variable_in_a_template_is_an_error_naming_the_taskserv() {
    let dir = tempfile::tempdir().unwrap();
    copy_taskserv(dir.path(), "redis");
    fs::write(
        dir.path().join("redis/install.sh.j2"),
        "#!/bin/bash\necho {{ params.no_such_param }}\n",
    )
    .unwrap();
    let catalog = Catalog::load(dir.path()).unwrap();
    let request = TaskservRequest {
        name: TaskservName::parse("redis").unwrap(),
        params: Default::default(),
    };
    let plan = catalog
        .resolve(&[request], &big_ubuntu(), &|_, _| true)
        .unwrap();
    let err = catalog
        .render(&plan[0], &facts(), &BTreeMap::new())
        .unwrap_err();
    assert_eq!(err.taskserv.as_str(), "redis");
    let text = err.to_string();
    assert!(text.starts_with("redis: "), "{text}");
    assert!(
        text.contains("undefined") && text.contains("install.sh.j2"),
        "{text}"
    );
}

/// A one-taskserv catalog in `dir` with the shipped `name`'s folder.
fn copy_taskserv(dir: &Path, name: &str) {
    fs::write(
        dir.join("registry.toml"),
        format!("[[taskservs]]\nname = \"{name}\"\n"),
    )
    .unwrap();
    fs::create_dir(dir.join(name)).unwrap();
    for file in ["taskserv.ncl", "install.sh.j2", "health.sh.j2"] {
        fs::copy(shipped().join(name).join(file), dir.join(name).join(file)).unwrap();
    }
}

fn load_with_definition(definition: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    copy_taskserv(dir.path(), "redis");
    fs::write(dir.path().join("redis/taskserv.ncl"), definition).unwrap();
    Catalog::load(dir.path()).unwrap_err().to_string()
}

#[test]
fn a_definition_with_a_field_of_the_wrong_type_fails_with_nickels_message_and_line() {
    let err = load_with_definition(
        "{\n  name = \"redis\",\n  version = \"1\",\n  description = \"d\",\n  \
         category = \"c\",\n  os = [\"debian\"],\n  max_retries = \"x\",\n}\n",
    );
    assert!(
        err.contains("contract broken by the value of `max_retries`"),
        "{err}"
    );
    assert!(err.contains("redis/taskserv.ncl:7:"), "{err}");
    assert!(!err.contains('\u{1b}'), "no colours: {err}");
}

#[test]
fn a_definition_missing_its_name_fails_with_nickels_message_and_line() {
    let err = load_with_definition(
        "{\n  version = \"1\",\n  description = \"d\",\n  category = \"c\",\n  \
         os = [\"debian\"],\n}\n",
    );
    assert!(err.contains("missing definition for `name`"), "{err}");
    assert!(err.contains("redis/taskserv.ncl:1:"), "{err}");
}

#[test]
fn a_folder_missing_a_file_fails_to_load_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    copy_taskserv(dir.path(), "redis");
    fs::remove_file(dir.path().join("redis/health.sh.j2")).unwrap();
    let err = Catalog::load(dir.path()).unwrap_err().to_string();
    assert!(
        err.ends_with("redis: taskserv redis has no health.sh.j2"),
        "{err}"
    );
}

#[test]
fn a_definition_whose_name_differs_from_the_registry_fails_to_load() {
    let dir = tempfile::tempdir().unwrap();
    copy_taskserv(dir.path(), "redis");
    let text = fs::read_to_string(dir.path().join("redis/taskserv.ncl")).unwrap();
    fs::write(
        dir.path().join("redis/taskserv.ncl"),
        text.replace("name = \"redis\"", "name = \"valkey\""),
    )
    .unwrap();
    let err = Catalog::load(dir.path()).unwrap_err().to_string();
    assert!(
        err.contains("its name is \"valkey\" but the registry lists it as \"redis\""),
        "{err}"
    );
}
