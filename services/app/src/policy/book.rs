//! A loaded set of Cedar policies, validated against its schema, and the two questions the
//! platform asks it: may this user request a VM of this template, and which limits do they
//! have.

use std::collections::{HashMap, HashSet};
use std::str::FromStr;

use cedar_policy::{
    Authorizer, Context, Decision, Entities, Entity, EntityId, EntityTypeName, EntityUid, PolicyId,
    PolicySet, Request, RestrictedExpression, Schema, ValidationMode, Validator,
};
use domain::quota::{Limit, Limits, Size};

use super::PolicyError;
use crate::Principal;

/// The annotations of a limits policy, each a number.
const LIMITS: [&str; 5] = ["vms", "vcpus", "ram_mib", "gpus", "max_hours"];

/// Policies that passed validation.
pub struct PolicyBook {
    policies: PolicySet,
    count: usize,
}

/// The template a request names, as the policies see it.
pub struct TemplateFacts<'a> {
    pub provider: &'a str,
    pub template: &'a str,
    pub size: Size,
    pub tags: &'a [String],
}

/// A refusal, naming the policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denied {
    pub policy: String,
    pub reason: String,
}

impl std::fmt::Display for Denied {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "denied by policy {:?}: {}", self.policy, self.reason)
    }
}

impl PolicyBook {
    /// Parses the schema and every `(file name, text)` of policies, and validates them;
    /// the error names the file or policy at fault. A policy's id is its `@id`, else
    /// `<file>#<n>`.
    pub fn parse(schema: &str, files: &[(String, String)]) -> Result<Self, PolicyError> {
        let (schema, _warnings) = Schema::from_cedarschema_str(schema)
            .map_err(|e| PolicyError(format!("the schema: {e}")))?;
        let mut policies = PolicySet::new();
        for (file, text) in files {
            let parsed = PolicySet::from_str(text)
                .map_err(|e| PolicyError(format!("{file}: {}", pretty(&e))))?;
            for (n, policy) in parsed.policies().enumerate() {
                let id = policy
                    .annotation("id")
                    .map(str::to_owned)
                    .unwrap_or_else(|| format!("{file}#{n}"));
                for key in LIMITS {
                    if let Some(value) = policy.annotation(key) {
                        value.parse::<u64>().map_err(|_| {
                            PolicyError(format!(
                                "{file}: policy {id:?}: @{key}({value:?}) is not a number"
                            ))
                        })?;
                    }
                }
                policies
                    .add(policy.new_id(PolicyId::new(&id)))
                    .map_err(|e| PolicyError(format!("{file}: policy {id:?}: {e}")))?;
            }
        }
        let validated = Validator::new(schema).validate(&policies, ValidationMode::Strict);
        if !validated.validation_passed() {
            let errors: Vec<String> = validated.validation_errors().map(|e| pretty(e)).collect();
            return Err(PolicyError(format!(
                "the policies do not match the schema: {}",
                errors.join("; ")
            )));
        }
        let count = policies.policies().count();
        Ok(PolicyBook { policies, count })
    }

    /// How many policies it holds.
    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Whether `who` may request a VM of `template` for `hours`.
    pub fn may_create(
        &self,
        who: &Principal,
        template: &TemplateFacts<'_>,
        hours: u64,
    ) -> Result<(), Denied> {
        let resource = uid(
            "Template",
            &format!("{}/{}", template.provider, template.template),
        );
        let provider = uid("Provider", template.provider);
        let tags = template
            .tags
            .iter()
            .map(|t| RestrictedExpression::new_string(t.clone()));
        let attrs = HashMap::from([
            ("vcpus".to_owned(), long(template.size.vcpus)),
            ("ram_mib".to_owned(), long(template.size.ram_mib)),
            ("gpus".to_owned(), long(template.size.gpus)),
            ("tags".to_owned(), RestrictedExpression::new_set(tags)),
        ]);
        let entity = Entity::new(resource.clone(), attrs, HashSet::from([provider.clone()]))
            .expect("literal attributes evaluate");
        let context = Context::from_pairs([("duration_hours".to_owned(), long(hours))])
            .expect("one literal pair");
        let extra = [entity, Entity::new_no_attrs(provider, HashSet::new())];
        let (decision, reasons) = self.decide(who, "create_vm", resource, context, extra);
        if decision == Decision::Allow {
            return Ok(());
        }
        Err(self.denied(reasons, || {
            format!(
                "no policy permits {} to request template {}/{}",
                who.email, template.provider, template.template
            )
        }))
    }

    /// Whether `who` may install taskserv `name` (of `category`) on a VM of `provider`.
    pub fn may_install(
        &self,
        who: &Principal,
        name: &str,
        category: &str,
        provider: &str,
    ) -> Result<(), Denied> {
        let resource = uid("Taskserv", name);
        let attrs = HashMap::from([(
            "category".to_owned(),
            RestrictedExpression::new_string(category.to_owned()),
        )]);
        let entity = Entity::new(resource.clone(), attrs, HashSet::new())
            .expect("literal attributes evaluate");
        let context = Context::from_pairs([(
            "provider".to_owned(),
            RestrictedExpression::new_string(provider.to_owned()),
        )])
        .expect("one literal pair");
        let (decision, reasons) = self.decide(who, "install_taskserv", resource, context, [entity]);
        if decision == Decision::Allow {
            return Ok(());
        }
        Err(self.denied(reasons, || {
            format!("no policy permits {} to install taskserv {name}", who.email)
        }))
    }

    /// The refusal of the first policy in `reasons`, or the default deny.
    fn denied(&self, reasons: Vec<PolicyId>, default: impl FnOnce() -> String) -> Denied {
        match reasons.first() {
            Some(id) => Denied {
                reason: self
                    .policies
                    .policy(id)
                    .and_then(|p| p.annotation("reason"))
                    .unwrap_or("refused")
                    .to_owned(),
                policy: id.to_string(),
            },
            None => Denied {
                policy: "default-deny".into(),
                reason: default(),
            },
        }
    }

    /// The limits of `who`: for each, the highest any applying limits policy gives.
    pub fn limits(&self, who: &Principal) -> Limits {
        let resource = uid("Platform", "provisioning");
        let (decision, reasons) =
            self.decide(who, "limits", resource, Context::empty(), Vec::new());
        let mut limits = Limits::none();
        if decision != Decision::Allow {
            return limits;
        }
        for id in &reasons {
            let Some(policy) = self.policies.policy(id) else {
                continue;
            };
            let fields = [
                ("vms", &mut limits.vms),
                ("vcpus", &mut limits.vcpus),
                ("ram_mib", &mut limits.ram_mib),
                ("gpus", &mut limits.gpus),
                ("max_hours", &mut limits.max_hours),
            ];
            for (key, limit) in fields {
                let value = policy.annotation(key).and_then(|v| v.parse::<u64>().ok());
                if let Some(value) = value.filter(|v| *v > limit.value || limit.policy == "none") {
                    *limit = Limit {
                        value,
                        policy: id.to_string(),
                    };
                }
            }
        }
        limits
    }

    /// The decision on `who` doing `action` to `resource`, and the policies that made it
    /// (sorted, so answers do not depend on hashing order).
    fn decide(
        &self,
        who: &Principal,
        action: &str,
        resource: EntityUid,
        context: Context,
        extra: impl IntoIterator<Item = Entity>,
    ) -> (Decision, Vec<PolicyId>) {
        let principal = uid("User", &who.user.to_string());
        let groups: HashSet<EntityUid> = who.groups.iter().map(|g| uid("Group", g)).collect();
        let attrs = HashMap::from([
            (
                "email".to_owned(),
                RestrictedExpression::new_string(who.email.clone()),
            ),
            (
                "role".to_owned(),
                RestrictedExpression::new_string(who.role.as_str().to_owned()),
            ),
        ]);
        let user = Entity::new(principal.clone(), attrs, groups.clone())
            .expect("literal attributes evaluate");
        let entities = std::iter::once(user)
            .chain(
                groups
                    .into_iter()
                    .map(|g| Entity::new_no_attrs(g, HashSet::new())),
            )
            .chain(extra);
        let entities = match Entities::from_entities(entities, None) {
            Ok(entities) => entities,
            Err(e) => {
                tracing::error!(error = %e, "could not build the policies' entities");
                return (Decision::Deny, vec![]);
            }
        };
        let action = uid("Action", action);
        let request = Request::new(principal, action, resource, context, None)
            .expect("a request without a schema is always valid");
        let response = Authorizer::new().is_authorized(&request, &self.policies, &entities);
        for error in response.diagnostics().errors() {
            tracing::warn!(error = %error, "a policy failed to evaluate");
        }
        let mut reasons: Vec<PolicyId> = response.diagnostics().reason().cloned().collect();
        reasons.sort_by_key(|id| id.to_string());
        (response.decision(), reasons)
    }
}

fn uid(kind: &str, id: &str) -> EntityUid {
    let kind = EntityTypeName::from_str(kind).expect("a literal type name");
    EntityUid::from_type_name_and_id(kind, EntityId::new(id))
}

fn long(n: u64) -> RestrictedExpression {
    RestrictedExpression::new_long(i64::try_from(n).unwrap_or(i64::MAX))
}

/// An error with its causes, on one line.
fn pretty(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
