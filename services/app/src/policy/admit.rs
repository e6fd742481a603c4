//! Admitting a VM request: the policies' decision on the template, then the caller's limits
//! against what they hold. A refusal names the policy, counted and logged, and
//! nothing is recorded.

use domain::identity::UserId;
use domain::provisioning::{ProviderId, TemplateId};
use domain::quota::{Size, Usage};

use super::TemplateFacts;
use crate::Principal;
use crate::{App, Error};

/// Whether `principal` may request a VM of `template` for `hours`.
pub async fn admit(
    app: &App,
    principal: &Principal,
    template: &store::catalog::TemplateRow,
    hours: u64,
) -> Result<(), Error> {
    let book = app.policies.book();
    let size = Size::of_template(template.cpu, template.ram_gb, template.gpu.as_deref());
    let facts = TemplateFacts {
        provider: &template.provider_id,
        template: &template.id,
        size,
        tags: &template.tags,
    };
    if let Err(denied) = book.may_create(principal, &facts, hours) {
        return Err(refuse(app, principal, &denied.policy, denied.to_string()));
    }
    let limits = book.limits(principal);
    let usage = usage_of(app, principal.user).await?;
    limits
        .admit(&usage, size, hours)
        .map_err(|exceeded| refuse(app, principal, &exceeded.limit.policy, exceeded.to_string()))
}

/// Whether `principal` may request, together, `count` VMs of each template of `nodes` for
/// `hours` (a cluster): the policies' decision on each template, then the limits against
/// what they hold plus every one of those VMs. A refusal names the policy; then none of
/// the VMs is made.
pub async fn admit_many(
    app: &App,
    principal: &Principal,
    nodes: &[(&store::catalog::TemplateRow, u32)],
    hours: u64,
) -> Result<(), Error> {
    let book = app.policies.book();
    let limits = book.limits(principal);
    let mut usage = usage_of(app, principal.user).await?;
    for (template, count) in nodes {
        let size = Size::of_template(template.cpu, template.ram_gb, template.gpu.as_deref());
        let facts = TemplateFacts {
            provider: &template.provider_id,
            template: &template.id,
            size,
            tags: &template.tags,
        };
        if *count == 0 {
            continue;
        }
        if let Err(denied) = book.may_create(principal, &facts, hours) {
            return Err(refuse(app, principal, &denied.policy, denied.to_string()));
        }
        for _ in 0..*count {
            limits.admit(&usage, size, hours).map_err(|exceeded| {
                let detail = format!("the cluster's nodes together: {exceeded}");
                refuse(app, principal, &exceeded.limit.policy, detail)
            })?;
            usage.add(size);
        }
    }
    Ok(())
}

/// Whether `principal` may have a VM of `template` live `hours` from its request (an
/// extension): the policies' decision on the template as for a create of that long. The
/// longest life of the limits (`@max_hours`) is the aggregate's to hold, since the VM's
/// expiry may move meanwhile; a refusal there is counted with [`denied_lifetime`].
pub async fn admit_lifetime(
    app: &App,
    principal: &Principal,
    provider: &str,
    template: &str,
    hours: u64,
) -> Result<(), Error> {
    // A template since removed from the catalog has no facts to decide on: the limits
    // alone hold it.
    let row = match (ProviderId::parse(provider), TemplateId::parse(template)) {
        (Ok(p), Ok(t)) => store::catalog::template(&app.pool, &p, &t).await?,
        _ => None,
    };
    let Some(template) = row else { return Ok(()) };
    let size = Size::of_template(template.cpu, template.ram_gb, template.gpu.as_deref());
    let facts = TemplateFacts {
        provider: &template.provider_id,
        template: &template.id,
        size,
        tags: &template.tags,
    };
    let book = app.policies.book();
    book.may_create(principal, &facts, hours)
        .map_err(|denied| refuse(app, principal, &denied.policy, denied.to_string()))
}

/// Counts and logs an extension the aggregate refused for `policy`'s longest life.
pub fn denied_lifetime(app: &App, principal: &Principal, policy: &str, detail: &str) {
    app.policies.denied(policy);
    tracing::warn!(policy, user = %principal.user, %detail, "VM extension denied by policy");
}

fn refuse(app: &App, principal: &Principal, policy: &str, detail: String) -> Error {
    app.policies.denied(policy);
    tracing::warn!(policy, user = %principal.user, %detail, "VM request denied by policy");
    Error::Forbidden {
        policy: Some(policy.to_owned()),
        detail,
    }
}

/// What `user` holds: their VMs not destroyed, sized by their templates as the catalog has
/// them now. Read from the read model, so requests faster than the projector may pass a
/// limit by those in flight.
pub async fn usage_of(app: &App, user: UserId) -> Result<Usage, Error> {
    let mut usage = Usage::default();
    for held in store::views::holdings(&app.pool, user).await? {
        let size = Size::of_template(held.cpu, held.ram_gb, held.gpu.as_deref());
        usage.add_many(size, held.vms.max(0) as u64);
    }
    Ok(usage)
}
