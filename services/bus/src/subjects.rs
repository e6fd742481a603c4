use cqrs_es::Aggregate;
use domain::provisioning::{JobId, ProviderId, Provisioning, VmId};

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

    /// `<prefix>.events.<kind>.<id>.<event_type>`: kind `vm` for the `Provisioning`
    /// aggregate, else the aggregate type in snake case; the event type in snake case.
    pub fn event(&self, aggregate_type: &str, id: &str, event_type: &str) -> String {
        let kind = if aggregate_type == Provisioning::TYPE {
            "vm".to_owned()
        } else {
            snake_case(aggregate_type)
        };
        format!(
            "{}.events.{kind}.{id}.{}",
            self.prefix,
            snake_case(event_type)
        )
    }

    /// Every event of one VM.
    pub fn events_of(&self, vm: VmId) -> String {
        format!("{}.events.vm.{vm}.>", self.prefix)
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

fn snake_case(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_subjects_name_the_vm_and_the_event_type_in_snake_case() {
        let subjects = Subjects::new("provisioning");
        let vm: VmId = "0b6f8a4e-1111-4222-8333-444455556666".parse().unwrap();
        assert_eq!(
            subjects.event(Provisioning::TYPE, &vm.to_string(), "DestroyRequested"),
            "provisioning.events.vm.0b6f8a4e-1111-4222-8333-444455556666.destroy_requested"
        );
        assert_eq!(subjects.stream("EVENTS"), "PROVISIONING_EVENTS");
    }
}
