//! The rules a catalog command must follow: valid texts, sizes and tags, complete orders;
//! and how a template changes.

use std::collections::HashSet;
use std::hash::Hash;

use super::events::{TemplateChanges, TemplateSpec};
use crate::provisioning::{ProviderId, TemplateId, ValueError};

/// The most tags a template may have.
pub const MAX_TAGS: usize = 32;
/// The most ids a new order may list: as many as the catalog could sensibly hold.
pub const MAX_ORDER: usize = 1000;

impl TemplateChanges {
    pub(super) fn validate(&self) -> Result<(), ValueError> {
        let texts = [
            ("name", &self.name),
            ("flavor_name", &self.flavor_name),
            ("image_name", &self.image_name),
            ("username", &self.username),
        ];
        for (field, value) in texts {
            value.as_deref().map(|v| text(field, v)).transpose()?;
        }
        if let Some(d) = &self.description {
            description(d)?;
        }
        let sizes = [
            ("cpu", self.cpu),
            ("ram_gb", self.ram_gb),
            ("storage_gb", self.storage_gb),
        ];
        for (field, value) in sizes {
            value.map(|v| positive(field, v)).transpose()?;
        }
        if let Some(Some(gpu)) = &self.gpu {
            text("gpu", gpu)?;
        }
        if let Some(t) = &self.tags {
            tags(t)?;
        }
        Ok(())
    }

    /// Only the changes that differ from `current`.
    pub(super) fn differing_from(self, t: &TemplateSpec) -> TemplateChanges {
        fn keep<T: PartialEq>(new: Option<T>, old: &T) -> Option<T> {
            new.filter(|n| n != old)
        }
        TemplateChanges {
            name: keep(self.name, &t.name),
            description: keep(self.description, &t.description),
            flavor_name: keep(self.flavor_name, &t.flavor_name),
            image_name: keep(self.image_name, &t.image_name),
            username: keep(self.username, &t.username),
            cpu: keep(self.cpu, &t.cpu),
            ram_gb: keep(self.ram_gb, &t.ram_gb),
            storage_gb: keep(self.storage_gb, &t.storage_gb),
            gpu: keep(self.gpu, &t.gpu),
            tags: keep(self.tags, &t.tags),
            sort_order: keep(self.sort_order, &t.sort_order),
        }
    }

    pub(super) fn apply_to(self, t: &mut TemplateSpec) {
        fn set<T>(field: &mut T, new: Option<T>) {
            if let Some(v) = new {
                *field = v;
            }
        }
        set(&mut t.name, self.name);
        set(&mut t.description, self.description);
        set(&mut t.flavor_name, self.flavor_name);
        set(&mut t.image_name, self.image_name);
        set(&mut t.username, self.username);
        set(&mut t.cpu, self.cpu);
        set(&mut t.ram_gb, self.ram_gb);
        set(&mut t.storage_gb, self.storage_gb);
        set(&mut t.gpu, self.gpu);
        set(&mut t.tags, self.tags);
        set(&mut t.sort_order, self.sort_order);
    }
}

pub(super) fn validate_template(t: &TemplateSpec) -> Result<(), ValueError> {
    TemplateChanges {
        name: Some(t.name.clone()),
        description: Some(t.description.clone()),
        flavor_name: Some(t.flavor_name.clone()),
        image_name: Some(t.image_name.clone()),
        username: Some(t.username.clone()),
        cpu: Some(t.cpu),
        ram_gb: Some(t.ram_gb),
        storage_gb: Some(t.storage_gb),
        gpu: Some(t.gpu.clone()),
        tags: Some(t.tags.clone()),
        sort_order: Some(t.sort_order),
    }
    .validate()
}

fn invalid(field: &'static str, reason: impl Into<String>) -> ValueError {
    ValueError {
        field,
        reason: reason.into(),
    }
}

/// A short, non-blank, single-line text such as a name or a flavor.
pub(super) fn text(field: &'static str, value: &str) -> Result<(), ValueError> {
    if value.trim().is_empty() || value.trim() != value {
        return Err(invalid(
            field,
            "must not be blank or start or end with spaces",
        ));
    }
    if value.chars().count() > 200 || value.contains(char::is_control) {
        return Err(invalid(field, "must be one line of at most 200 characters"));
    }
    Ok(())
}

fn description(value: &str) -> Result<(), ValueError> {
    match value.chars().count() <= 2000 {
        true => Ok(()),
        false => Err(invalid("description", "must be at most 2000 characters")),
    }
}

fn positive(field: &'static str, value: i32) -> Result<(), ValueError> {
    match value > 0 {
        true => Ok(()),
        false => Err(invalid(field, "must be greater than 0")),
    }
}

/// Tags are lowercase words such as `simple`, `gpu` or `jupyter-notebook`, each once.
fn tags(tags: &[String]) -> Result<(), ValueError> {
    if tags.len() > MAX_TAGS {
        return Err(invalid(
            "tags",
            format!("must be at most {MAX_TAGS} tags, not {}", tags.len()),
        ));
    }
    let mut seen = HashSet::new();
    for tag in tags {
        let word = !tag.is_empty()
            && tag.len() <= 64
            && tag
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "._-".contains(c));
        if !word {
            return Err(invalid(
                "tags",
                format!("{tag:?} is not 1 to 64 characters of [a-z0-9._-]"),
            ));
        }
        if !seen.insert(tag) {
            return Err(invalid("tags", format!("{tag:?} is listed twice")));
        }
    }
    Ok(())
}

/// Checks that `ids` names every one of `existing` exactly once.
pub(super) fn permutation<'a, T>(
    ids: &[T],
    existing: impl Iterator<Item = &'a T>,
) -> Result<(), ValueError>
where
    T: Eq + Hash + AsIdStr + 'a,
{
    if ids.len() > MAX_ORDER {
        return Err(invalid(
            "ids",
            format!("must list at most {MAX_ORDER} ids, not {}", ids.len()),
        ));
    }
    let existing: HashSet<&T> = existing.collect();
    let mut seen = HashSet::new();
    for id in ids {
        if !existing.contains(id) {
            return Err(invalid("ids", format!("{:?} does not exist", id.id_str())));
        }
        if !seen.insert(id) {
            return Err(invalid("ids", format!("{:?} is listed twice", id.id_str())));
        }
    }
    if seen.len() != existing.len() {
        return Err(invalid(
            "ids",
            format!("must list all {} ids, not {}", existing.len(), seen.len()),
        ));
    }
    Ok(())
}

pub(super) trait AsIdStr {
    fn id_str(&self) -> &str;
}

impl AsIdStr for ProviderId {
    fn id_str(&self) -> &str {
        self.as_str()
    }
}

impl AsIdStr for TemplateId {
    fn id_str(&self) -> &str {
        self.as_str()
    }
}
