//! Rendering a plan step's install and health scripts (Jinja2 syntax, by minijinja). A
//! variable the context lacks is an error, not an empty string: a script with a hole in it
//! would run as root.

use std::collections::BTreeMap;

use domain::taskservs::{PlannedTaskserv, TaskservName};
use minijinja::{context, AutoEscape, Environment, UndefinedBehavior};

use crate::catalog::{Catalog, HEALTH_FILE, INSTALL_FILE};
use crate::checks::ordering_deps;
use crate::driver::TIMEOUT_NOTE;

/// What a script may know of the VM it runs on.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct VmFacts {
    pub name: String,
    pub address: String,
    pub user: String,
    pub provider: String,
}

/// A step's scripts, ready to write to the VM.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    pub install: String,
    pub health: String,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{taskserv}: {message}")]
pub struct RenderError {
    pub taskserv: TaskservName,
    pub message: String,
}

/// A taskserv's two template sources, as read from its folder.
#[derive(Debug, Clone)]
pub(crate) struct Templates {
    pub(crate) install: String,
    pub(crate) health: String,
}

impl Templates {
    /// Parses both, so that a syntax error shows at load rather than at a VM's creation.
    pub(crate) fn check(&self, name: &TaskservName) -> Result<(), String> {
        let names = [
            format!("{name}/{INSTALL_FILE}"),
            format!("{name}/{HEALTH_FILE}"),
        ];
        let env = environment();
        for (file, source) in names.iter().zip([&self.install, &self.health]) {
            env.template_from_named_str(file, source)
                .map_err(describe)?;
        }
        Ok(())
    }
}

fn environment<'s>() -> Environment<'s> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.set_keep_trailing_newline(true);
    env.set_auto_escape_callback(|_| AutoEscape::None);
    env.add_filter("sh", shell_quote);
    env
}

/// `{{ params.x | sh }}`: a value as one shell word, single-quoted.
fn shell_quote(value: minijinja::Value) -> String {
    let text = match value.as_str() {
        Some(s) => s.to_owned(),
        None => value.to_string(),
    };
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// minijinja's message with the template's name and line (`k3s/install.sh.j2:3`).
fn describe(error: minijinja::Error) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(&error);
    while let Some(cause) = source {
        text.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    text
}

impl Catalog {
    /// Renders `step`'s scripts for the VM described by `facts`. Context: `params`, `vm`
    /// (name, address, user, provider), `taskserv` (name, version) and `deps`: for each
    /// taskserv it requires or prefers before it, the outputs known of it (empty at create
    /// time; scripts then read them on the VM, see the crate documentation).
    pub fn render(
        &self,
        step: &PlannedTaskserv,
        facts: &VmFacts,
        dep_outputs: &BTreeMap<TaskservName, BTreeMap<String, String>>,
    ) -> Result<Rendered, RenderError> {
        let error = |message: String| RenderError {
            taskserv: step.name.clone(),
            message,
        };
        let position = self
            .position(&step.name)
            .ok_or_else(|| error("it is not in this deployment's catalog".into()))?;
        let templates = self.entries[position]
            .templates
            .as_ref()
            .ok_or_else(|| error("its catalog entry has no templates".into()))?;
        let deps: BTreeMap<&str, BTreeMap<String, String>> = ordering_deps(self, &step.name)
            .map(|dep| {
                let outputs = dep_outputs.get(dep).cloned().unwrap_or_default();
                (dep.as_str(), outputs)
            })
            .collect();
        let ctx = context! {
            params => &step.params,
            vm => facts,
            deps => deps,
            taskserv => context! { name => step.name.as_str(), version => &step.version },
        };
        let install_name = format!("{}/{INSTALL_FILE}", step.name);
        let health_name = format!("{}/{HEALTH_FILE}", step.name);
        let env = environment();
        let render = |file: &str, source: &str| {
            env.template_from_named_str(file, source)
                .and_then(|t| t.render(&ctx))
                .map_err(|e| error(describe(e)))
        };
        let timeout = self.entries[position].definition.health.timeout_secs;
        Ok(Rendered {
            install: render(&install_name, &templates.install)?,
            health: with_timeout_note(render(&health_name, &templates.health)?, timeout),
        })
    }
}

/// Puts the health timeout on the script's second line (after `#!`), where [`crate::driver`]
/// reads it: the driver's signature has only the rendered scripts.
fn with_timeout_note(script: String, timeout_secs: u32) -> String {
    let note = format!("{TIMEOUT_NOTE}{timeout_secs}\n");
    match script.split_once('\n') {
        Some((first, rest)) if first.starts_with("#!") => format!("{first}\n{note}{rest}"),
        _ => format!("{note}{script}"),
    }
}
