use std::collections::HashMap;

use secrecy::ExposeSecret;

use super::*;

fn write(dir: &Path, path: &str, text: &str) {
    let path = dir.join(path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

const GOOD_TF: &str = r#"
terraform {
  required_providers {
    cloud = { source = "example/cloud", version = "~> 1.2" }
  }
}
variable "vm_id" {}
variable "vm_name" {}
variable "public_key" {}
variable "image_name" {}
variable "flavor_name" {}
variable "allow_ssh_from_v4" {}
variable "username" {}
variable "user_data" {}
variable "boot_callback_url" {}
variable "phone_home_url" {}
variable "duration_hours" {}
variable "api_token" { sensitive = true }
output "vm_ip" { value = "10.0.0.1" }
output "vm_provision_status" { value = "PROVISIONING_COMPLETED" }
"#;

const GOOD_TOML: &str = r#"
[[providers]]
id = "cloud"
name = "Cloud"
folder = "cloud"
enabled = true
regions = ["north"]
[[providers.credentials]]
name = "TF_VAR_api_token"
env = "CLOUD_API_TOKEN"
secret = { name = "cloud-secret", key = "token" }
"#;

fn registry_with(tf: &str, toml: &str) -> (tempfile::TempDir, Result<Registry, RegistryError>) {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "cloud/main.tf", tf);
    write(dir.path(), "providers.toml", toml);
    let registry = Registry::load(dir.path());
    (dir, registry)
}

fn problems(tf: &str, toml: &str) -> String {
    match registry_with(tf, toml).1 {
        Err(e) => e.to_string(),
        Ok(_) => String::new(),
    }
}

#[test]
fn a_registry_matching_its_folders_loads() {
    let (_dir, registry) = registry_with(GOOD_TF, GOOD_TOML);
    let registry = registry.unwrap();
    assert_eq!(registry.providers[0].regions, ["north"]);
    assert_eq!(
        registry.providers[0].credentials[0].terraform_variable(),
        Some("api_token")
    );
}

#[test]
fn an_unknown_folder_is_named() {
    let toml = GOOD_TOML.replace("folder = \"cloud\"", "folder = \"nowhere\"");
    assert!(problems(GOOD_TF, &toml).contains("nowhere does not exist"));
}

#[test]
fn a_missing_output_is_named() {
    let tf = GOOD_TF.replace("output \"vm_ip\"", "output \"address\"");
    assert!(problems(&tf, GOOD_TOML).contains("declares no output vm_ip"));
}

#[test]
fn a_missing_common_variable_is_named() {
    let tf = GOOD_TF.replace("variable \"user_data\" {}", "");
    assert!(problems(&tf, GOOD_TOML).contains("declares no variable user_data"));
}

#[test]
fn a_credential_without_source_is_named() {
    let toml = GOOD_TOML
        .replace("env = \"CLOUD_API_TOKEN\"\n", "")
        .replace(
            "secret = { name = \"cloud-secret\", key = \"token\" }\n",
            "",
        );
    assert!(problems(GOOD_TF, &toml).contains("credential TF_VAR_api_token has no source"));
}

#[test]
fn a_credential_feeding_an_undeclared_variable_is_named() {
    let tf = GOOD_TF.replace("variable \"api_token\" { sensitive = true }", "");
    assert!(problems(&tf, GOOD_TOML).contains("feeds variable api_token"));
}

#[test]
fn an_unpinned_provider_is_named() {
    let tf = GOOD_TF.replace(", version = \"~> 1.2\"", "");
    assert!(problems(&tf, GOOD_TOML).contains("does not pin a version of provider cloud"));
}

#[test]
fn an_enabled_template_of_a_disabled_provider_is_named() {
    let toml = GOOD_TOML.replace("enabled = true", "enabled = false");
    let (_dir, registry) = registry_with(GOOD_TF, &toml);
    let template = |provider: &str, template: &str, enabled| CatalogTemplate {
        provider: provider.into(),
        template: template.into(),
        enabled,
    };
    let problems = registry.unwrap().catalog_problems(&[
        template("cloud", "small", true),
        template("cloud", "old", false),
        template("gone", "tiny", true),
    ]);
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(problems[0].contains("cloud/small"));
    assert!(problems[1].contains("not in the registry"));
}

#[test]
fn credentials_come_from_the_encrypted_file_before_the_environment() {
    let (dir, registry) = registry_with(GOOD_TF, GOOD_TOML);
    let registry = registry.unwrap();
    let provider = &registry.providers[0];
    let empty = Credentials::resolve(&registry, |_| None, HashMap::new());
    assert!(!empty.present(provider));
    let err = empty.runner_env(provider).unwrap_err().to_string();
    assert!(err.contains("CLOUD_API_TOKEN"), "{err}");

    let identity = age::x25519::Identity::generate();
    let secret_file = dir.path().join("credentials.age");
    let plaintext = b"# cloud\nCLOUD_API_TOKEN=from-file\n";
    std::fs::write(
        &secret_file,
        age::encrypt(&identity.to_public(), plaintext).unwrap(),
    )
    .unwrap();
    let key_file = dir.path().join("key.txt");
    std::fs::write(&key_file, identity.to_string().expose_secret()).unwrap();
    let file = Credentials::read_age_file(&secret_file, &key_file).unwrap();

    let credentials = Credentials::resolve(&registry, |_| Some("from-env".into()), file);
    let env = credentials.runner_env(provider).unwrap();
    assert_eq!(env[0].0, "TF_VAR_api_token");
    assert_eq!(env[0].1.expose_secret(), "from-file");
    let env_only = Credentials::resolve(&registry, |_| Some("from-env".into()), HashMap::new());
    assert_eq!(
        env_only.runner_env(provider).unwrap()[0].1.expose_secret(),
        "from-env"
    );
}

#[test]
fn with_secret_references_a_credential_is_present_when_its_secret_is_named() {
    let (_dir, registry) = registry_with(GOOD_TF, GOOD_TOML);
    let registry = registry.unwrap();
    assert!(Credentials::by_reference().present(&registry.providers[0]));
    let toml = GOOD_TOML.replace(
        "secret = { name = \"cloud-secret\", key = \"token\" }\n",
        "",
    );
    let (_dir, registry) = registry_with(GOOD_TF, &toml);
    assert!(!Credentials::by_reference().present(&registry.unwrap().providers[0]));
}

/// `GOOD_TF` split in two folders, `common` and `cloud`, and the registry naming both.
fn two_folders(common_extra: &str) -> (tempfile::TempDir, Result<Registry, RegistryError>) {
    let dir = tempfile::tempdir().unwrap();
    let (common, own): (Vec<&str>, Vec<&str>) = GOOD_TF
        .lines()
        .partition(|l| l.starts_with("variable \"vm_") || l.starts_with("variable \"user"));
    write(
        dir.path(),
        "common/common.tf",
        &format!("{}\n{common_extra}", common.join("\n")),
    );
    write(dir.path(), "cloud/main.tf", &own.join("\n"));
    let toml = GOOD_TOML.replace("folder = \"cloud\"", "folders = [\"common\", \"cloud\"]");
    write(dir.path(), "providers.toml", &toml);
    let registry = Registry::load(dir.path());
    (dir, registry)
}

#[test]
fn a_provider_of_several_folders_is_checked_as_one_flat_directory() {
    let (dir, registry) = two_folders("");
    let registry = registry.unwrap();
    let provider = &registry.providers[0];
    assert_eq!(provider.folders, ["common", "cloud"]);
    let files = provider.files(dir.path()).unwrap();
    let names: Vec<&str> = files.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(
        names,
        ["common.tf", "main.tf"],
        "in the order of the folders"
    );
    assert!(files[0].path.starts_with(dir.path().join("common")));
}

#[test]
fn a_name_declared_in_two_folders_of_a_provider_is_named() {
    let (_dir, registry) = two_folders("variable \"api_token\" {}\nlocals {\n  a = 1\n}\n");
    let err = registry.unwrap_err().to_string();
    assert!(
        err.contains("variable api_token is declared more than once"),
        "{err}"
    );
    assert!(!err.contains("local a"), "{err}");
}

#[test]
fn a_file_name_in_two_folders_of_a_provider_is_named() {
    let (dir, _) = two_folders("");
    write(dir.path(), "common/main.tf", "locals {\n  a = 1\n}\n");
    let err = Registry::load(dir.path()).unwrap_err().to_string();
    assert!(err.contains("main.tf is in both"), "{err}");
}

#[test]
fn a_subfolder_is_refused_since_a_working_directory_is_flat() {
    let (dir, _) = two_folders("");
    write(dir.path(), "cloud/modules/x.tf", "");
    let err = Registry::load(dir.path()).unwrap_err().to_string();
    assert!(err.contains("is a subfolder"), "{err}");
}

#[test]
fn a_provider_listing_no_folder_is_named() {
    let toml = GOOD_TOML.replace("folder = \"cloud\"", "folders = []");
    assert!(problems(GOOD_TF, &toml).contains("lists no folder"));
}
