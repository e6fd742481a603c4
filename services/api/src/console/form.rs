//! What every form of the console shares: the gate a post passes (sent from this site's own
//! page, by a signed-in caller), its fields, and how a use case's refusal is shown (beside
//! its field, or at the top of the page) rather than answered as JSON.

use axum::http::request::Parts;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use super::session::{from_this_site, sign_in_required, signed_in};
use super::{page, Layout};
use crate::auth::Principal;
use crate::{ApiError, AppState};

/// The fields of a posted form, in order; a name may come more than once (checkboxes).
pub(crate) struct Fields(Vec<(String, String)>);

impl Fields {
    pub fn parse(body: &[u8]) -> Self {
        Fields(url::form_urlencoded::parse(body).into_owned().collect())
    }

    /// The first value of `name`, trimmed; `""` when absent.
    pub fn get(&self, name: &str) -> &str {
        self.0
            .iter()
            .find(|(n, _)| n == name)
            .map_or("", |(_, v)| v.trim())
    }

    /// Each field whose name starts with `prefix`: the rest of its name, and its value
    /// trimmed.
    pub fn prefixed<'a>(&'a self, prefix: &'a str) -> impl Iterator<Item = (&'a str, &'a str)> {
        self.0
            .iter()
            .filter_map(move |(n, v)| Some((n.strip_prefix(prefix)?, v.trim())))
    }

    /// Every non-empty value of `name`, trimmed.
    pub fn all(&self, name: &str) -> Vec<&str> {
        self.0
            .iter()
            .filter(|(n, v)| n == name && !v.trim().is_empty())
            .map(|(_, v)| v.trim())
            .collect()
    }
}

/// A use case's refusal as a page shows it: which field (if one), why, and the status the
/// page is answered with.
#[derive(Debug, Clone)]
pub(crate) struct Refusal {
    pub status: StatusCode,
    pub field: Option<String>,
    pub detail: String,
}

impl Refusal {
    /// The refusal of `error`; a fault of the platform stays an error (an opaque 500).
    pub fn of(error: impl Into<ApiError>) -> Result<Self, ApiError> {
        let error = error.into();
        let (status, _) = error.status_and_code();
        match error {
            ApiError::Internal(_) | ApiError::Unauthorized => Err(error),
            ApiError::Invalid { field, reason } => Ok(Refusal {
                status,
                detail: format!("{field}: {reason}"),
                field: Some(field),
            }),
            other => Ok(Refusal {
                status,
                field: None,
                detail: other.to_string(),
            }),
        }
    }

    /// The reason, when it is about `field` (or one of `fields`).
    pub fn about(&self, fields: &[&str]) -> Option<&str> {
        let field = self.field.as_deref()?;
        let own = fields
            .iter()
            .any(|f| field == *f || field.starts_with(&format!("{f}[")));
        own.then_some(self.detail.as_str())
    }
}

/// The gate of a form's post: from this site's page (else a 403 page), by a signed-in caller
/// (else the sign-in form); the caller of the use case it asks for.
pub(crate) async fn poster(
    state: &AppState,
    parts: &mut Parts,
) -> Result<Result<(Principal, app::Caller), Response>, ApiError> {
    if !from_this_site(state, &parts.headers) {
        let detail = "The form must be sent from this site's own page.";
        return Ok(Err(message(StatusCode::FORBIDDEN, None, "Refused", detail)));
    }
    let Some(principal) = signed_in(state, parts).await? else {
        return Ok(Err(sign_in_required(state, parts)));
    };
    let caller = caller_of(state, parts, &principal).await;
    Ok(Ok((principal, caller)))
}

/// The caller of a use case asked for by a page's request.
pub(crate) async fn caller_of(
    state: &AppState,
    parts: &mut Parts,
    principal: &Principal,
) -> app::Caller {
    use axum::extract::FromRequestParts;
    let request_id = parts
        .extensions
        .get::<crate::RequestId>()
        .map_or_else(|| uuid::Uuid::new_v4().to_string(), |id| id.0.clone());
    let Ok(crate::network::ClientAddr(client_addr)) =
        crate::network::ClientAddr::from_request_parts(parts, state).await;
    app::Caller {
        principal: principal.0.clone(),
        request_id,
        client_addr,
    }
}

/// The notice a page's query names (`done=<what>`), from the page's fixed list of
/// `(what, notice)`: a link cannot make a page say anything else.
pub(crate) fn done_notice(
    query: &str,
    notices: &'static [(&'static str, &'static str)],
) -> Option<&'static str> {
    let done = url::form_urlencoded::parse(query.as_bytes())
        .find(|(k, _)| k == "done")
        .map(|(_, v)| v.into_owned())?;
    notices
        .iter()
        .find(|(what, _)| *what == done)
        .map(|(_, notice)| *notice)
}

/// `303 See Other` to `to`: a post done, the browser reads the page again.
pub(crate) fn see_other(to: &str) -> Response {
    let mut response = StatusCode::SEE_OTHER.into_response();
    if let Ok(to) = HeaderValue::from_str(to) {
        response.headers_mut().insert(header::LOCATION, to);
    }
    response
}

#[derive(askama::Template)]
#[template(path = "console/message.html")]
struct MessagePage {
    layout: Layout,
    title: &'static str,
    detail: String,
}

/// A page saying only `detail` under `title`: a refusal that has no form to go back to.
pub(crate) fn message(
    status: StatusCode,
    principal: Option<&Principal>,
    title: &'static str,
    detail: impl Into<String>,
) -> Response {
    let layout = match principal {
        Some(principal) => Layout::of(principal),
        None => Layout::signed_out(),
    };
    page(
        status,
        &MessagePage {
            layout,
            title,
            detail: detail.into(),
        },
    )
}

/// The 403 page of an admin's page asked by a user.
pub(crate) fn forbidden(principal: &Principal) -> Response {
    message(
        StatusCode::FORBIDDEN,
        Some(principal),
        "Not allowed",
        "Only admins may open this page.",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_notice_of_the_pages_list_is_shown() {
        const NOTICES: [(&str, &str); 2] = [("extended", "Extended."), ("destroy", "Destroyed.")];
        assert_eq!(done_notice("done=destroy", &NOTICES), Some("Destroyed."));
        assert_eq!(
            done_notice("x=1&done=extended", &NOTICES),
            Some("Extended.")
        );
        assert_eq!(done_notice("done=<script>", &NOTICES), None);
        assert_eq!(done_notice("other=1", &NOTICES), None);
    }

    #[test]
    fn repeated_fields_are_all_kept_and_values_trimmed() {
        let fields = Fields::parse(b"taskserv=grafana&taskserv=&taskserv=redis&name=+web+");
        assert_eq!(fields.all("taskserv"), ["grafana", "redis"]);
        assert_eq!(fields.get("name"), "web");
        assert_eq!(fields.get("absent"), "");
    }

    #[test]
    fn a_refusal_is_shown_beside_its_field() {
        let refusal = Refusal::of(ApiError::Invalid {
            field: "allow_ssh_from[1]".into(),
            reason: "too wide".into(),
        })
        .unwrap();
        assert_eq!(refusal.status, StatusCode::UNPROCESSABLE_ENTITY);
        assert!(refusal.about(&["allow_ssh_from"]).is_some());
        assert!(refusal.about(&["name"]).is_none());
        assert!(Refusal::of(ApiError::internal("boom")).is_err());
    }
}
