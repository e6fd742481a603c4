//! The document's links: from the answer that makes a resource to the operations on it, by
//! the id in that answer's body. A client (or a fuzzer) follows them to use what it made.

use utoipa::openapi::link::LinkBuilder;
use utoipa::openapi::{OpenApi, RefOr};
use utoipa::Modify;

pub(super) struct Links;

/// The id of the VM in a VM's answer, and of its job.
const VM: &[(&str, &str)] = &[("id", "$response.body#/id")];
const VM_JOB: &[(&str, &str)] = &[
    ("id", "$response.body#/id"),
    ("job", "$response.body#/job/id"),
];
const KEY: &[(&str, &str)] = &[("id", "$response.body#/id")];
const PROVIDER: &[(&str, &str)] = &[("provider", "$response.body#/id")];

/// (path of a `POST` that makes something, its status, then each operation on what it
/// made with its parameters and where they are in the answer).
type Made = (
    &'static str,
    &'static str,
    &'static [(&'static str, &'static [(&'static str, &'static str)])],
);

const MADE: &[Made] = &[
    (
        "/api/v1/vms",
        "202",
        &[
            ("get_vm", VM),
            ("destroy_vm", VM),
            ("patch_vm", VM),
            ("list_vm_events", VM),
            ("list_vm_logs", VM),
            ("stream_vm", VM),
            ("retry_vm", VM),
            ("refresh_vm", VM),
            ("list_vm_jobs", VM),
            ("archive_vm", VM),
            ("extend_vm", VM),
            ("get_vm_job", VM_JOB),
            ("list_vm_job_logs", VM_JOB),
            ("cancel_vm_job", VM_JOB),
            ("force_cancel_vm_job", VM_JOB),
        ],
    ),
    (
        "/api/v1/ssh-keys",
        "201",
        &[("get_ssh_key", KEY), ("delete_ssh_key", KEY)],
    ),
    (
        "/api/v1/ssh-keys/generate",
        "201",
        &[
            ("get_ssh_key", &[("id", "$response.body#/key/id")]),
            ("delete_ssh_key", &[("id", "$response.body#/key/id")]),
        ],
    ),
    ("/api/v1/tokens", "201", &[("delete_token", KEY)]),
    // Stated, so that a fuzzer does not guess them: a template is named by its provider
    // and its id, and a guess took the template's id for both.
    (
        "/api/v1/admin/providers",
        "201",
        &[
            ("update_provider", PROVIDER),
            ("reorder_templates", PROVIDER),
            ("list_templates", PROVIDER),
        ],
    ),
    (
        "/api/v1/admin/templates",
        "201",
        &[(
            "update_template",
            &[
                ("provider", "$response.body#/provider"),
                ("template", "$response.body#/id"),
            ],
        )],
    ),
];

impl Modify for Links {
    fn modify(&self, openapi: &mut OpenApi) {
        for (path, status, targets) in MADE {
            let operation = openapi
                .paths
                .paths
                .get_mut(*path)
                .and_then(|item| item.post.as_mut());
            let Some(RefOr::T(response)) =
                operation.and_then(|op| op.responses.responses.get_mut(*status))
            else {
                continue;
            };
            for (target, parameters) in *targets {
                let link = parameters
                    .iter()
                    .fold(
                        LinkBuilder::new().operation_id(*target),
                        |link, (name, at)| link.parameter(*name, *at),
                    )
                    .build();
                response.links.insert((*target).to_owned(), link.into());
            }
        }
    }
}

/// utoipa 5 writes a link's fields in snake case (`operation_id`); OpenAPI names them in
/// camel case (`operationId`), which is what clients read. Renamed in the written document.
pub(super) fn camel_case_links(document: &mut serde_json::Value) {
    let Some(paths) = document["paths"].as_object_mut() else {
        return;
    };
    let links = paths
        .values_mut()
        .filter_map(|item| item.as_object_mut())
        .flat_map(|item| item.values_mut())
        .filter_map(|operation| operation["responses"].as_object_mut())
        .flat_map(|responses| responses.values_mut())
        .filter_map(|response| response.get_mut("links")?.as_object_mut())
        .flat_map(|links| links.values_mut())
        .filter_map(|link| link.as_object_mut());
    for link in links {
        for (snake, camel) in [
            ("operation_id", "operationId"),
            ("operation_ref", "operationRef"),
            ("request_body", "requestBody"),
        ] {
            if let Some(value) = link.remove(snake) {
                link.insert(camel.to_owned(), value);
            }
        }
    }
}
