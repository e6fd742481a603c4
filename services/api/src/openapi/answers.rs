//! The answers every operation can give whatever its handler does: they come from the
//! layers around the routes (authentication, the body limit, the timeouts, the stream caps)
//! and from the extractors shared by every handler. Added here once, so no operation can
//! forget one; an operation's own description of a status is kept.

use utoipa::openapi::path::Operation;
use utoipa::openapi::{ContentBuilder, OpenApi, Ref, ResponseBuilder};
use utoipa::Modify;

pub(super) struct CommonAnswers;

/// Which operations answer a status, and why.
struct Answer {
    status: &'static str,
    description: &'static str,
    applies: fn(&Shape) -> bool,
}

/// What the rules above look at.
struct Shape<'a> {
    path: &'a str,
    secured: bool,
    has_body: bool,
    has_input: bool,
}

const ANSWERS: &[Answer] = &[
    Answer {
        status: "400",
        description: "The request cannot be read: a body that is not JSON (or not sent as \
            `application/json`), a parameter that is not of its type, a NUL byte or invalid \
            UTF-8 in a parameter or field; `detail` names it",
        applies: |s| s.has_input,
    },
    Answer {
        status: "401",
        description: "Missing, unknown, expired or revoked credential",
        applies: |s| s.secured,
    },
    Answer {
        status: "403",
        description: "The caller is not an admin",
        applies: |s| s.secured && is_admin_route(s.path),
    },
    Answer {
        status: "404",
        description: "No such resource (or not the caller's)",
        applies: |s| s.path.contains('{'),
    },
    Answer {
        status: "404",
        description: "Sign-in with OpenID Connect is not configured",
        applies: |s| s.path.starts_with("/api/v1/auth/") && s.path != "/api/v1/auth/status",
    },
    Answer {
        status: "413",
        description: "The body is larger than 256 KiB (code `too_large`)",
        applies: |s| s.has_body,
    },
    Answer {
        status: "422",
        description: "A field or parameter is invalid: `detail` names it and says why",
        applies: |s| s.has_input,
    },
    Answer {
        status: "429",
        description: "The caller already holds 16 open streams and exports (code \
            `too_many_requests`); close one first",
        applies: |s| s.path.ends_with("/stream") || s.path.ends_with("/export"),
    },
    Answer {
        status: "503",
        description: "The database or NATS cannot be reached, or the request took too long; \
            nothing was changed. Retry after `Retry-After` seconds",
        applies: |s| s.path.starts_with("/api/v1/"),
    },
];

fn is_admin_route(path: &str) -> bool {
    path.starts_with("/api/v1/admin/") || path.starts_with("/api/v1/audit")
}

impl Modify for CommonAnswers {
    fn modify(&self, openapi: &mut OpenApi) {
        for (path, item) in openapi.paths.paths.iter_mut() {
            let operations = [
                &mut item.get,
                &mut item.put,
                &mut item.post,
                &mut item.delete,
                &mut item.patch,
            ];
            for operation in operations.into_iter().flatten() {
                add_common_answers(path, operation);
            }
        }
    }
}

fn add_common_answers(path: &str, operation: &mut Operation) {
    let has_body = operation.request_body.is_some();
    let shape = Shape {
        path,
        secured: operation
            .security
            .as_ref()
            .is_some_and(|rules| !rules.is_empty()),
        has_body,
        has_input: has_body
            || operation
                .parameters
                .as_ref()
                .is_some_and(|parameters| !parameters.is_empty()),
    };
    let responses = &mut operation.responses.responses;
    for answer in ANSWERS.iter().filter(|answer| (answer.applies)(&shape)) {
        responses
            .entry(answer.status.to_owned())
            .or_insert_with(|| {
                ResponseBuilder::new()
                    .description(answer.description)
                    .content(
                        "application/json",
                        ContentBuilder::new()
                            .schema(Some(Ref::from_schema_name("ErrorBody")))
                            .build(),
                    )
                    .build()
                    .into()
            });
    }
}
