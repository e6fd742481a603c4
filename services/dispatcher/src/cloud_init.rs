//! The cloud-init document of a VM, rendered from typed data with askama, so no variable
//! can be missing. What differs between providers (creating the user, EESSI, callbacks)
//! is data from the registry and the template, not a copy of the file.

use askama::Template;
use bus::JobMessage;

#[derive(Template)]
#[template(path = "cloud-init.yaml", escape = "none")]
pub struct CloudInit<'a> {
    pub vm_name: &'a str,
    /// Quoted with [`quoted`].
    pub username: &'a str,
    /// Quoted with [`quoted`].
    pub public_key: &'a str,
    pub create_user: bool,
    pub eessi: bool,
    pub boot_callback_url: &'a str,
    pub phone_home_url: &'a str,
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

/// Renders the cloud-init document of a job.
pub fn render(job: &JobMessage, settings: &registry::CloudInit) -> Result<String, askama::Error> {
    CloudInit {
        vm_name: job.spec.name.as_str(),
        username: &quoted(&job.spec.username),
        public_key: &quoted(job.spec.ssh_public_key.as_str()),
        create_user: settings.create_user,
        eessi: settings.eessi,
        boot_callback_url: "",
        phone_home_url: "",
    }
    .document()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn document(create_user: bool, eessi: bool, phone_home_url: &str) -> String {
        CloudInit {
            vm_name: "web-1",
            username: &quoted("naic-user"),
            public_key: &quoted("ssh-ed25519 AAAA test@example: with colon"),
            create_user,
            eessi,
            boot_callback_url: "",
            phone_home_url,
        }
        .document()
        .unwrap()
    }

    #[test]
    fn a_provider_that_creates_the_user_gets_the_user_with_the_key() {
        let doc = document(true, false, "");
        assert!(doc.starts_with("#cloud-config\n"), "{doc}");
        assert!(doc.contains("  - name: \"naic-user\"\n"), "{doc}");
        assert!(
            doc.contains("      - \"ssh-ed25519 AAAA test@example: with colon\"\n"),
            "{doc}"
        );
        assert!(!doc.contains("cvmfs"));
        assert!(!doc.contains("phone_home"));
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
