use domain::provisioning::{JobId, ProviderId, VmId};
use domain::AggregateKind;

/// The subject taxonomy of `nats/subjects.md`, under one prefix.
#[derive(Debug, Clone)]
pub struct Subjects {
    prefix: String,
}

impl Subjects {
    pub fn new(prefix: &str) -> Self {
        Self {
            prefix: prefix.to_owned(),
        }
    }

    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The stream name for a definition name, e.g. `PROVISIONING_EVENTS`.
    pub fn stream(&self, name: &str) -> String {
        format!(
            "{}_{}",
            self.prefix.to_uppercase().replace(['.', '-'], "_"),
            name
        )
    }

    /// `<prefix>.events.vm.<provider>.<vm_id>.<EventType>`: a VM's event, under the
    /// provider the VM was requested on (see [`provider_token`]).
    pub fn vm_event(&self, provider: &ProviderId, vm: &str, event_type: &str) -> String {
        format!(
            "{}.events.{}.{}.{vm}.{event_type}",
            self.prefix,
            AggregateKind::Vm.subject_token(),
            provider_token(provider)
        )
    }

    /// `<prefix>.events.catalog.<provider>.<EventType>`: a catalog change concerning one
    /// provider (its own or one of its templates), or [`ALL_PROVIDERS`] for one concerning
    /// every provider (`SeedImported`, `ProvidersReordered`).
    pub fn catalog_event(&self, provider: Option<&ProviderId>, event_type: &str) -> String {
        let scope = provider.map_or_else(|| ALL_PROVIDERS.to_owned(), provider_token);
        let kind = AggregateKind::Catalog.subject_token();
        format!("{}.events.{kind}.{scope}.{event_type}", self.prefix)
    }

    /// `<prefix>.events.cluster.<cluster_id>.<EventType>`: a cluster's event.
    pub fn cluster_event(&self, cluster: &str, event_type: &str) -> String {
        let kind = AggregateKind::Cluster.subject_token();
        format!("{}.events.{kind}.{cluster}.{event_type}", self.prefix)
    }

    /// Every event of one VM, whatever its provider.
    pub fn events_of(&self, vm: VmId) -> String {
        let kind = AggregateKind::Vm.subject_token();
        format!("{}.events.{kind}.*.{vm}.>", self.prefix)
    }

    /// The events of one type of one VM, whatever its provider.
    pub fn event_of(&self, vm: VmId, event_type: &str) -> String {
        let kind = AggregateKind::Vm.subject_token();
        format!("{}.events.{kind}.*.{vm}.{event_type}", self.prefix)
    }

    /// `<prefix>.gauges.platform`: the platform gauges, every 10 s.
    pub fn gauges(&self) -> String {
        format!("{}.gauges.platform", self.prefix)
    }

    pub fn job(&self, provider: &ProviderId) -> String {
        format!("{}.jobs.{}", self.prefix, provider.as_str())
    }

    /// `<prefix>.runner.<vm_id>.<job>.<kind>` with kind `started`, `log`, `heartbeat` or
    /// `result`.
    pub fn runner(&self, vm: VmId, job: JobId, kind: &str) -> String {
        format!("{}.runner.{vm}.{job}.{kind}", self.prefix)
    }

    /// `<prefix>.control.job_active.<vm_id>.<job>`: a runner asks, before it starts
    /// Terraform, whether its job is still the VM's active one (request and reply).
    pub fn job_active(&self, vm: VmId, job: JobId) -> String {
        format!("{}.control.job_active.{vm}.{job}", self.prefix)
    }

    /// Every `job_active` question, for the daemon that answers them.
    pub fn job_active_all(&self) -> String {
        format!("{}.control.job_active.*.*", self.prefix)
    }

    pub fn expand(&self, template: &str) -> String {
        template.replace("{prefix}", &self.prefix)
    }
}

/// The scope token of catalog events that concern every provider: upper case, which no
/// provider id can be.
pub const ALL_PROVIDERS: &str = "ALL";

/// A provider id as one subject token: a `.` (allowed in ids, a separator in subjects) is
/// written `~`, which no id contains.
pub fn provider_token(provider: &ProviderId) -> String {
    provider.as_str().replace('.', "~")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_subjects_name_the_provider_the_vm_and_the_event_type() {
        let subjects = Subjects::new("provisioning");
        let vm: VmId = "0b6f8a4e-1111-4222-8333-444455556666".parse().unwrap();
        let azure = ProviderId::parse("azure").unwrap();
        assert_eq!(
            subjects.vm_event(&azure, &vm.to_string(), "DestroyRequested"),
            "provisioning.events.vm.azure.0b6f8a4e-1111-4222-8333-444455556666.DestroyRequested"
        );
        assert_eq!(
            subjects.events_of(vm),
            "provisioning.events.vm.*.0b6f8a4e-1111-4222-8333-444455556666.>"
        );
        assert_eq!(subjects.stream("EVENTS"), "PROVISIONING_EVENTS");
        assert_eq!(
            subjects.cluster_event("0b6f8a4e-1111-4222-8333-444455556666", "GatePassed"),
            "provisioning.events.cluster.0b6f8a4e-1111-4222-8333-444455556666.GatePassed"
        );
    }

    #[test]
    fn a_provider_id_with_a_dot_stays_one_subject_token() {
        let subjects = Subjects::new("p");
        let dotted = ProviderId::parse("eu.west").unwrap();
        assert_eq!(
            subjects.catalog_event(Some(&dotted), "TemplateCreated"),
            "p.events.catalog.eu~west.TemplateCreated"
        );
        assert_eq!(
            subjects.catalog_event(None, "SeedImported"),
            "p.events.catalog.ALL.SeedImported"
        );
        assert!(ProviderId::parse(ALL_PROVIDERS).is_err());
        // A VM's events too: `events.vm.*.<vm>.>` must match them.
        assert_eq!(
            subjects.vm_event(&dotted, "0b6f8a4e-1111-4222-8333-444455556666", "Applied"),
            "p.events.vm.eu~west.0b6f8a4e-1111-4222-8333-444455556666.Applied"
        );
    }
}
