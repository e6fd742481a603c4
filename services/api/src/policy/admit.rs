//! Admitting a VM request: the policies' decision on the template, then the caller's limits
//! against what they hold. A refusal is a 403 naming the policy, counted and logged, and
//! nothing is recorded.

use domain::identity::UserId;
use domain::provisioning::{ProviderId, TemplateId};
use domain::quota::{Size, Usage};

use super::TemplateFacts;
use crate::auth::Principal;
use crate::{ApiError, AppState};

/// Whether `principal` may request a VM of `template` for `hours`.
pub async fn admit(
    state: &AppState,
    principal: &Principal,
    template: &store::catalog::TemplateRow,
    hours: u64,
) -> Result<(), ApiError> {
    let book = state.policies.book();
    let size = Size::of_template(template.cpu, template.ram_gb, template.gpu.as_deref());
    let facts = TemplateFacts {
        provider: &template.provider_id,
        template: &template.id,
        size,
        tags: &template.tags,
    };
    if let Err(denied) = book.may_create(principal, &facts, hours) {
        return Err(refuse(state, principal, &denied.policy, denied.to_string()));
    }
    let limits = book.limits(principal);
    let usage = usage_of(state, principal.user).await?;
    limits.admit(&usage, size, hours).map_err(|exceeded| {
        refuse(
            state,
            principal,
            &exceeded.limit.policy,
            exceeded.to_string(),
        )
    })
}

/// Whether `principal` may have a VM of `template` live `hours` from its request (an
/// extension): the policies' decision on the template as for a create of that long. The
/// longest life of the limits (`@max_hours`) is the aggregate's to hold, since the VM's
/// expiry may move meanwhile; a refusal there is counted with [`denied_lifetime`].
pub async fn admit_lifetime(
    state: &AppState,
    principal: &Principal,
    provider: &str,
    template: &str,
    hours: u64,
) -> Result<(), ApiError> {
    // A template since removed from the catalog has no facts to decide on: the limits
    // alone hold it.
    let row = match (ProviderId::parse(provider), TemplateId::parse(template)) {
        (Ok(p), Ok(t)) => store::catalog::template(&state.pool, &p, &t).await?,
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
    let book = state.policies.book();
    book.may_create(principal, &facts, hours)
        .map_err(|denied| refuse(state, principal, &denied.policy, denied.to_string()))
}

/// Counts and logs an extension the aggregate refused for `policy`'s longest life.
pub fn denied_lifetime(state: &AppState, principal: &Principal, policy: &str, detail: &str) {
    state.policies.denied(policy);
    tracing::warn!(policy, user = %principal.user, %detail, "VM extension denied by policy");
}

fn refuse(state: &AppState, principal: &Principal, policy: &str, detail: String) -> ApiError {
    state.policies.denied(policy);
    tracing::warn!(policy, user = %principal.user, %detail, "VM request denied by policy");
    ApiError::Forbidden(detail)
}

/// What `user` holds: their VMs not destroyed, sized by their templates as the catalog has
/// them now. Read from the read model, so requests faster than the projector may pass a
/// limit by those in flight.
pub async fn usage_of(state: &AppState, user: UserId) -> Result<Usage, ApiError> {
    let mut usage = Usage::default();
    for held in store::views::holdings(&state.pool, user).await? {
        let size = Size::of_template(held.cpu, held.ram_gb, held.gpu.as_deref());
        usage.add_many(size, held.vms.max(0) as u64);
    }
    Ok(usage)
}
