//! The VM a plan is resolved for: its provider, image OS family and template size.

/// What a plan must fit: where the VM runs and how big its template is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub provider: String,
    /// The image's OS family (`"debian"`, `"ubuntu"`); `None` when the image is not one
    /// [`os_family`] knows, and then no taskserv installs on it.
    pub os: Option<String>,
    pub cpu: u32,
    pub ram_gb: u32,
    pub disk_gb: u32,
}

/// The OS family of an image, from its name as providers spell it: "Ubuntu 24.04 LTS" and
/// "ubuntu-24.04" are `ubuntu`; "debian-12-genericcloud" and "GOLD Debian 12" are `debian`.
pub fn os_family(image_name: &str) -> Option<&'static str> {
    let lower = image_name.to_ascii_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    ["ubuntu", "debian"]
        .into_iter()
        .find(|family| words.contains(family))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_names_as_providers_spell_them_give_their_family() {
        assert_eq!(os_family("Ubuntu 24.04 LTS"), Some("ubuntu"));
        assert_eq!(os_family("ubuntu-24.04"), Some("ubuntu"));
        assert_eq!(os_family("debian-12-genericcloud"), Some("debian"));
        assert_eq!(os_family("GOLD Debian 12"), Some("debian"));
        assert_eq!(os_family("Rocky Linux 9"), None);
        assert_eq!(os_family("debianish"), None);
    }
}
