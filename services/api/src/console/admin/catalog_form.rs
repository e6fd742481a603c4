//! What the catalog's forms share (a provider's and a template's, new or edited): the
//! inputs, each with its label, help and the refusal that names it; how a number or a list
//! of tags is read from a field; and the page that shows them.

use askama::Template;
use axum::http::StatusCode;
use axum::response::Response;

use super::super::form::Refusal;
use super::super::{page, Layout};
use crate::auth::Principal;

/// How an input is shown.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Text,
    Number,
    Textarea,
    Checkbox,
    Select,
}

/// One input of a form, with what it holds (a checkbox: `on` when ticked).
pub(super) struct Input {
    pub name: &'static str,
    pub label: &'static str,
    pub kind: Kind,
    pub value: String,
    pub help: &'static str,
    /// `(value, label)` of a select's options.
    pub options: Vec<(String, String)>,
    pub error: Option<String>,
}

impl Input {
    pub fn new(name: &'static str, label: &'static str, kind: Kind, value: &str) -> Self {
        Input {
            name,
            label,
            kind,
            value: value.to_owned(),
            help: "",
            options: vec![],
            error: None,
        }
    }

    pub fn help(self, help: &'static str) -> Self {
        Input { help, ..self }
    }

    pub fn options(self, options: Vec<(String, String)>) -> Self {
        Input { options, ..self }
    }

    fn is(&self, kind: Kind) -> bool {
        self.kind == kind
    }

    /// The ids of its help and error, for `aria-describedby`.
    fn described_by(&self) -> String {
        let mut ids = vec![];
        if !self.help.is_empty() {
            ids.push(format!("{}-help", self.name));
        }
        if self.error.is_some() {
            ids.push(format!("{}-error", self.name));
        }
        ids.join(" ")
    }
}

#[derive(Template)]
#[template(path = "console/admin/catalog_form.html")]
struct FormPage {
    layout: Layout,
    title: String,
    action: String,
    submit: &'static str,
    inputs: Vec<Input>,
    /// The refusal no input shows.
    general: Option<String>,
}

/// The form page: `inputs` under `title`, posted to `action`; the refusal beside the input
/// it names (`aliases` maps a use case's field to an input's), else at the top.
pub(super) fn form_page(
    principal: &Principal,
    title: String,
    action: String,
    submit: &'static str,
    mut inputs: Vec<Input>,
    refusal: Option<Refusal>,
    aliases: &[(&str, &str)],
) -> Response {
    let status = refusal.as_ref().map_or(StatusCode::OK, |r| r.status);
    let mut general = None;
    if let Some(refusal) = refusal {
        let field = refusal.field.as_deref().map(|f| {
            aliases
                .iter()
                .find(|(from, _)| *from == f)
                .map_or(f, |(_, to)| *to)
        });
        match inputs.iter_mut().find(|i| Some(i.name) == field) {
            Some(input) => input.error = Some(refusal.detail),
            None => general = Some(refusal.detail),
        }
    }
    page(
        status,
        &FormPage {
            layout: Layout::of(principal),
            title,
            action,
            submit,
            inputs,
            general,
        },
    )
}

/// A whole number typed in `field`; blank is `None`.
pub(super) fn whole(field: &str, value: &str) -> Result<Option<i32>, app::Error> {
    if value.is_empty() {
        return Ok(None);
    }
    value.parse().map(Some).map_err(|_| app::Error::Invalid {
        field: field.into(),
        reason: format!("{value:?} is not a whole number"),
    })
}

/// A whole number that must be given.
pub(super) fn required(field: &str, value: &str) -> Result<i32, app::Error> {
    whole(field, value)?.ok_or_else(|| app::Error::Invalid {
        field: field.into(),
        reason: "give a whole number".into(),
    })
}

/// Tags separated by commas or spaces.
pub(super) fn tags(value: &str) -> Vec<String> {
    value
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
        .collect()
}

/// A checkbox's value as the form holds it.
pub(super) fn ticked(on: bool) -> &'static str {
    if on {
        "on"
    } else {
        ""
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_tags_are_read_as_typed() {
        assert_eq!(whole("cpu", "").unwrap(), None);
        assert_eq!(whole("cpu", "4").unwrap(), Some(4));
        match required("cpu", "four") {
            Err(app::Error::Invalid { field, .. }) => assert_eq!(field, "cpu"),
            other => panic!("{other:?}"),
        }
        assert_eq!(tags("simple, gpu  jupyter"), ["simple", "gpu", "jupyter"]);
    }
}
