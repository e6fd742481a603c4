//! The cloud-init document of a VM, rendered from typed data with askama, so no variable
//! can be missing. What differs between providers (creating the user, EESSI, callbacks)
//! is data from the registry and the template, not a copy of the file.

use std::sync::Arc;
use std::time::Duration;

use askama::Template;
use bus::JobMessage;
use domain::callbacks::{CallbackClaims, CallbackSigner};
use domain::provisioning::{CallbackKind, JobAction};
use time::OffsetDateTime;

#[derive(Template)]
#[template(path = "cloud-init.yaml", escape = "none")]
pub struct CloudInit<'a> {
    /// The VM's DNS-safe host name, derived from its display name.
    pub host_name: &'a str,
    /// Quoted with [`quoted`].
    pub username: &'a str,
    /// Quoted with [`quoted`].
    pub public_key: &'a str,
    /// The VM's deploy key (public), for its install jobs; quoted with [`quoted`], or empty
    /// when the VM gets none (no callback key to derive it from).
    pub deploy_key: &'a str,
    pub create_user: bool,
    pub eessi: bool,
    pub boot_callback_url: &'a str,
    pub phone_home_url: &'a str,
    /// The application's callback URLs (`app_starting`, `app_ready`, `app_failed`), in
    /// `/etc/provisioning/callbacks.env` for it to use; empty without callbacks.
    pub app_urls: &'a [(&'static str, String)],
    /// The plan's scripts and `run.sh` (see [`crate::taskserv_boot`]); empty without
    /// taskservs. cloud-init runs `run.sh` after every other command.
    pub taskserv_files: &'a [crate::taskserv_boot::BootFile],
    /// The secret of the cluster the VM is a node of (see [`crate::cluster_secret`]), quoted
    /// with [`quoted`]; empty for a VM of no cluster. Written to its file before `runcmd`.
    pub cluster_secret: &'a str,
}

/// Where the VMs of create jobs call back: `<public url>/api/v1/callbacks/<token>`, each
/// token valid for `ttl` from the job's start.
#[derive(Debug, Clone)]
pub struct CallbackUrls {
    /// `PROVISIONING_PUBLIC_URL`, without a trailing `/`.
    pub public_url: String,
    pub signer: Arc<CallbackSigner>,
    /// `PROVISIONING_CALLBACK_TTL`.
    pub ttl: Duration,
}

impl CallbackUrls {
    /// The URL of callback `kind` (of taskserv step `step`; 0 for the other kinds).
    pub fn url(
        &self,
        job: &JobMessage,
        kind: CallbackKind,
        step: u8,
        now: OffsetDateTime,
    ) -> String {
        let claims = CallbackClaims {
            vm: job.vm_id,
            job: job.job_id,
            kind,
            expires: now.unix_timestamp() + self.ttl.as_secs() as i64,
            step,
        };
        let base = self.public_url.trim_end_matches('/');
        format!("{base}/api/v1/callbacks/{}", self.signer.sign(&claims))
    }
}

/// The callback URLs of a job, by kind: none but for a create job, whose VM boots.
pub fn urls(job: &JobMessage, callbacks: Option<&CallbackUrls>) -> Vec<(CallbackKind, String)> {
    let Some(callbacks) = callbacks.filter(|_| job.action == JobAction::Create) else {
        return vec![];
    };
    let now = OffsetDateTime::now_utc();
    CallbackKind::BOOT
        .iter()
        .map(|kind| (*kind, callbacks.url(job, *kind, 0, now)))
        .collect()
}

impl CloudInit<'_> {
    /// The document, ending with a newline like any YAML file.
    pub fn document(&self) -> Result<String, askama::Error> {
        let mut doc = self.render()?;
        doc.push('\n');
        Ok(doc)
    }
}

/// A YAML double-quoted scalar (JSON's string syntax is one): whatever a value holds, it
/// stays one value.
pub fn quoted(value: &str) -> String {
    serde_json::Value::String(value.to_owned()).to_string()
}

/// Renders the cloud-init document of a job, with its callback URLs (`urls`), the VM's
/// deploy key (public; empty for none), the files of its taskservs (`taskserv_files`,
/// empty for none) and its cluster's secret (`None` for a VM of no cluster).
pub fn render(
    job: &JobMessage,
    settings: &registry::CloudInit,
    urls: &[(CallbackKind, String)],
    deploy_key: &str,
    taskserv_files: &[crate::taskserv_boot::BootFile],
    cluster_secret: Option<&crate::cluster_secret::ClusterSecret>,
) -> Result<String, askama::Error> {
    let url = |kind| {
        urls.iter()
            .find(|(k, _)| *k == kind)
            .map_or("", |(_, u)| u.as_str())
    };
    let app_urls: Vec<(&'static str, String)> = [
        ("APP_STARTING_URL", CallbackKind::AppStarting),
        ("APP_READY_URL", CallbackKind::AppReady),
        ("APP_FAILED_URL", CallbackKind::AppFailed),
    ]
    .into_iter()
    .filter(|(_, kind)| !url(*kind).is_empty())
    .map(|(name, kind)| (name, quoted(url(kind))))
    .collect();
    CloudInit {
        host_name: job.spec.name.host_name().as_str(),
        username: &quoted(&job.spec.username),
        public_key: &quoted(job.spec.ssh_public_key.as_str()),
        deploy_key: &match deploy_key {
            "" => String::new(),
            key => quoted(key),
        },
        create_user: settings.create_user,
        eessi: settings.eessi,
        boot_callback_url: url(CallbackKind::BootStarted),
        phone_home_url: url(CallbackKind::PhoneHome),
        app_urls: &app_urls,
        taskserv_files,
        cluster_secret: &cluster_secret.map_or(String::new(), |s| quoted(s.expose())),
    }
    .document()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn document(create_user: bool, eessi: bool, phone_home_url: &str) -> String {
        CloudInit {
            host_name: "web-1",
            username: &quoted("naic-user"),
            public_key: &quoted("ssh-ed25519 AAAA test@example: with colon"),
            deploy_key: "",
            create_user,
            eessi,
            boot_callback_url: "",
            phone_home_url,
            app_urls: &[],
            taskserv_files: &[],
            cluster_secret: "",
        }
        .document()
        .unwrap()
    }

    #[test]
    fn a_provider_that_creates_the_user_gets_the_user_with_the_key() {
        let doc = document(true, false, "");
        assert!(doc.starts_with("#cloud-config\n"), "{doc}");
        assert!(doc.contains("\nhostname: web-1\n"), "{doc}");
        assert!(doc.contains("  - name: \"naic-user\"\n"), "{doc}");
        assert!(
            doc.contains("      - \"ssh-ed25519 AAAA test@example: with colon\"\n"),
            "{doc}"
        );
        assert!(!doc.contains("cvmfs"));
        assert!(!doc.contains("phone_home"));
    }

    #[test]
    fn the_deploy_key_is_authorized_beside_the_user_s_key() {
        for create_user in [true, false] {
            let doc = CloudInit {
                host_name: "web-1",
                username: &quoted("naic-user"),
                public_key: &quoted("ssh-ed25519 AAAA user"),
                deploy_key: &quoted("ssh-ed25519 BBBB provisioning-deploy"),
                create_user,
                eessi: false,
                boot_callback_url: "",
                phone_home_url: "",
                app_urls: &[],
                taskserv_files: &[],
                cluster_secret: "",
            }
            .document()
            .unwrap();
            let indent = if create_user { "      " } else { "  " };
            let keys = format!(
                "{indent}- \"ssh-ed25519 AAAA user\"\n{indent}- \"ssh-ed25519 BBBB provisioning-deploy\"\n"
            );
            assert!(doc.contains(&keys), "{doc}");
        }
    }

    #[test]
    fn a_provider_that_keeps_the_image_user_gets_only_the_key() {
        let doc = document(false, true, "https://example.test/go/abc");
        assert!(!doc.contains("users:"));
        assert!(doc
            .contains("ssh_authorized_keys:\n  - \"ssh-ed25519 AAAA test@example: with colon\"\n"));
        assert!(doc.contains("cvmfs_config setup"));
        assert!(doc.contains("url: \"https://example.test/go/abc\""));
    }
}
