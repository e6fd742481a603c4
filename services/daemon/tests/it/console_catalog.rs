//! The console's catalog forms, gauges page, taskserv params and VM list filters over
//! plain HTTP: an admin edits a template (seen in the catalog and the create form) and
//! creates a provider and a template, a bad field coming back beside its input with what
//! was typed; the gauges count the VMs made and their stream sends them; params typed in
//! the create form reach the `Requested` event; the list filters and pages.

use domain::identity::Role;
use futures::StreamExt;
use serde_json::{json, Value};

use crate::console::{app, assert_is_a_page, browser, page, sign_in, vm_of};
use crate::console_forms::{location, post};
use crate::helpers::{vm_request, TestApp, SSH_KEY};
use crate::users::Caller;

/// The admin API's view of template `local/id`.
async fn template(app: &TestApp, id: &str) -> Value {
    let all: Vec<Value> = app.get_json("/api/v1/admin/templates?provider=local").await;
    all.into_iter().find(|t| t["id"] == id).unwrap()
}

/// Every field of the edit form of `local/small`, as the admin API shows the template.
fn edit_fields(t: &Value) -> Vec<(&'static str, String)> {
    let text = |v: &Value| v.as_str().map_or_else(|| v.to_string(), str::to_owned);
    let tags: Vec<&str> = t["tags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    vec![
        ("name", text(&t["name"])),
        ("description", text(&t["description"])),
        ("flavor_name", text(&t["flavor_name"])),
        ("image_name", text(&t["image_name"])),
        ("username", text(&t["username"])),
        ("cpu", text(&t["cpu"])),
        ("ram_gb", text(&t["ram_gb"])),
        ("storage_gb", text(&t["storage_gb"])),
        ("gpu", t["gpu"].as_str().unwrap_or("").to_owned()),
        ("tags", tags.join(", ")),
        ("sort_order", text(&t["sort_order"])),
        ("enabled", "on".into()),
    ]
}

fn with<'a>(
    fields: &'a [(&'static str, String)],
    name: &str,
    value: &'a str,
) -> Vec<(&'a str, &'a str)> {
    fields
        .iter()
        .map(|(n, v)| (*n, if *n == name { value } else { v.as_str() }))
        .collect()
}

#[tokio::test]
async fn an_admin_edits_a_template_and_the_catalog_and_the_create_form_show_it() {
    let app = app().await;
    let admin = sign_in(&app, &app.token).await;
    let path = "/console/admin/catalog/templates/local/small";
    let (status, body) = page(&app, &admin, path).await;
    assert_eq!(status, 200, "{body}");
    assert_is_a_page(&body);
    for input in [
        "name",
        "description",
        "flavor_name",
        "image_name",
        "username",
        "cpu",
        "ram_gb",
        "storage_gb",
        "gpu",
        "tags",
        "sort_order",
        "enabled",
    ] {
        assert!(
            body.contains(&format!("name=\"{input}\"")),
            "{input}: {body}"
        );
    }
    let fields = edit_fields(&template(&app, "small").await);

    // A bad field: the form again, the reason beside it, what was typed kept.
    let response = post(&app, &admin, path, &with(&fields, "cpu", "0")).await;
    assert_eq!(response.status(), 422);
    let body = response.text().await.unwrap();
    assert!(
        body.contains("id=\"cpu-error\"") && body.contains("greater than 0"),
        "{body}"
    );
    assert!(body.contains("name=\"cpu\" value=\"0\""), "{body}");
    let response = post(&app, &admin, path, &with(&fields, "ram_gb", "lots")).await;
    assert_eq!(response.status(), 422);
    let body = response.text().await.unwrap();
    assert!(
        body.contains("id=\"ram_gb-error\"") && body.contains("value=\"lots\""),
        "{body}"
    );
    let response = post(&app, &admin, path, &with(&fields, "tags", "Not Lowercase")).await;
    assert_eq!(response.status(), 422);
    assert!(response.text().await.unwrap().contains("id=\"tags-error\""));
    assert_eq!(template(&app, "small").await["cpu"], 1, "nothing changed");

    let mut changed = with(&fields, "name", "Tiny box");
    changed.retain(|(n, _)| *n != "ram_gb");
    changed.push(("ram_gb", "3"));
    let response = post(&app, &admin, path, &changed).await;
    assert_eq!(response.status(), 303);
    assert_eq!(location(&response), "/console/admin/catalog?done=saved");
    let small = template(&app, "small").await;
    assert_eq!(
        (small["name"].as_str(), small["ram_gb"].as_i64()),
        (Some("Tiny box"), Some(3))
    );
    let (_, body) = page(&app, &admin, "/console/admin/catalog?done=saved").await;
    assert!(
        body.contains("Tiny box (1 vCPU, 3 GB RAM)") && body.contains("were saved"),
        "{body}"
    );
    let (_, body) = page(&app, &admin, "/console/vms/new").await;
    assert!(body.contains("Tiny box — 1 vCPU, 3 GB RAM"), "{body}");

    // A user meets the 403 page.
    let alice = app.user("alice@example.test", Role::User).await;
    let cookie = sign_in(&app, &alice.token).await;
    let (status, _) = page(&app, &cookie, path).await;
    assert_eq!(status, 403);
    let response = post(&app, &cookie, path, &changed).await;
    assert_eq!(response.status(), 403);
}

#[tokio::test]
async fn an_admin_creates_a_provider_and_a_template_from_the_console() {
    let app = app().await;
    let admin = sign_in(&app, &app.token).await;
    let new_provider = "/console/admin/catalog/new-provider";
    let (status, body) = page(&app, &admin, new_provider).await;
    assert_eq!(status, 200, "{body}");
    let response = post(
        &app,
        &admin,
        new_provider,
        &[("id", "Not An Id"), ("name", "Lab")],
    )
    .await;
    assert_eq!(response.status(), 422);
    let body = response.text().await.unwrap();
    assert!(
        body.contains("id=\"id-error\"") && body.contains("value=\"Not An Id\""),
        "{body}"
    );
    let fields = [
        ("id", "lab"),
        ("name", "Lab"),
        ("sort_order", ""),
        ("enabled", "on"),
    ];
    let response = post(&app, &admin, new_provider, &fields).await;
    assert_eq!(response.status(), 303);
    assert_eq!(location(&response), "/console/admin/catalog?done=created");
    let response = post(&app, &admin, new_provider, &fields).await;
    assert_eq!(response.status(), 409, "the same id again");
    assert!(response.text().await.unwrap().contains("id=\"refusal\""));
    let providers: Vec<Value> = app.get_json("/api/v1/admin/providers").await;
    assert!(
        providers
            .iter()
            .any(|p| p["id"] == "lab" && p["name"] == "Lab"),
        "{providers:?}"
    );

    let edit = "/console/admin/catalog/providers/local";
    let (status, body) = page(&app, &admin, edit).await;
    assert_eq!(status, 200, "{body}");
    let response = post(
        &app,
        &admin,
        edit,
        &[
            ("name", "Local lab"),
            ("sort_order", "x"),
            ("enabled", "on"),
        ],
    )
    .await;
    assert_eq!(response.status(), 422);
    assert!(response
        .text()
        .await
        .unwrap()
        .contains("id=\"sort_order-error\""));
    let response = post(
        &app,
        &admin,
        edit,
        &[
            ("name", "Local lab"),
            ("sort_order", "1"),
            ("enabled", "on"),
        ],
    )
    .await;
    assert_eq!(response.status(), 303);
    let (_, body) = page(&app, &admin, "/console/admin/catalog").await;
    assert!(body.contains("Local lab"), "{body}");

    let new_template = "/console/admin/catalog/new-template";
    let (status, body) = page(&app, &admin, &format!("{new_template}?provider=local")).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("<option value=\"local\" selected>"), "{body}");
    let mut fields = vec![
        ("provider", "local"),
        ("id", "xl"),
        ("name", "Extra large"),
        ("description", "Eight cores."),
        ("flavor_name", "local.xl"),
        ("image_name", "debian-12"),
        ("username", "debian"),
        ("cpu", "8"),
        ("ram_gb", "16"),
        ("storage_gb", ""),
        ("gpu", ""),
        ("tags", "simple"),
        ("sort_order", ""),
        ("enabled", "on"),
    ];
    let response = post(&app, &admin, new_template, &fields).await;
    assert_eq!(response.status(), 422);
    let body = response.text().await.unwrap();
    assert!(
        body.contains("id=\"storage_gb-error\"") && body.contains("value=\"Extra large\""),
        "{body}"
    );
    fields[9] = ("storage_gb", "100");
    let response = post(&app, &admin, new_template, &fields).await;
    assert_eq!(response.status(), 303);
    let xl = template(&app, "xl").await;
    assert_eq!(
        (xl["cpu"].as_i64(), xl["username"].as_str()),
        (Some(8), Some("debian"))
    );
    let (_, body) = page(&app, &admin, "/console/vms/new").await;
    assert!(body.contains("value=\"local/xl\""), "{body}");
}

/// The next `gauges` event's data on `stream`.
async fn next_gauges<B: AsRef<[u8]>>(
    stream: &mut (impl futures::Stream<Item = reqwest::Result<B>> + Unpin),
    buffer: &mut String,
) -> Value {
    loop {
        if let Some(at) = buffer.find("\n\n") {
            let event: String = buffer.drain(..at + 2).collect();
            if let Some(data) = event.lines().find_map(|l| l.strip_prefix("data:")) {
                if event.contains("event: gauges") || event.contains("event:gauges") {
                    return serde_json::from_str(data.trim()).unwrap();
                }
            }
            continue;
        }
        let chunk = tokio::time::timeout(std::time::Duration::from_secs(15), stream.next())
            .await
            .expect("a gauges event")
            .unwrap()
            .unwrap();
        buffer.push_str(&String::from_utf8_lossy(chunk.as_ref()));
    }
}

#[tokio::test]
async fn the_gauges_page_counts_the_vms_made_and_its_stream_follows_them() {
    let app = app().await;
    let alice = app.user("alice@example.test", Role::User).await;
    vm_of(&alice, "one").await;
    vm_of(&alice, "two").await;
    let admin = sign_in(&app, &app.token).await;
    let (status, body) = page(&app, &admin, "/console/admin/gauges").await;
    assert_eq!(status, 200, "{body}");
    assert_is_a_page(&body);
    // No dispatcher runs: both VMs are requested, their jobs queued.
    for shown in [
        "<th scope=\"row\">requested</th><td>2</td>",
        "<th scope=\"row\">local</th><td>2</td>",
        "<td id=\"jobs-queued\">2</td>",
        "<td id=\"jobs-running\">0</td>",
        "<td id=\"jobs-oldest\">none</td>",
        "<th scope=\"row\">dispatcher</th>",
    ] {
        assert!(body.contains(shown), "{shown}: {body}");
    }

    let response = browser()
        .get(format!("{}/console/admin/gauges/stream", app.address))
        .header("cookie", &admin)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let mut stream = response.bytes_stream();
    let mut buffer = String::new();
    let first = next_gauges(&mut stream, &mut buffer).await;
    assert_eq!(first["queued"], 2, "{first}");
    assert_eq!(first["by_provider"], json!([["local", 2]]), "{first}");
    vm_of(&alice, "three").await;
    let next = next_gauges(&mut stream, &mut buffer).await;
    assert_eq!(
        (next["queued"].as_i64(), next["by_status"].clone()),
        (Some(3), json!([["requested", 3]])),
        "{next}"
    );

    // A user is refused the page and its stream; a visitor asked to sign in.
    let cookie = sign_in(&app, &alice.token).await;
    assert_eq!(page(&app, &cookie, "/console/admin/gauges").await.0, 403);
    let stream = |cookie: &str| {
        browser()
            .get(format!("{}/console/admin/gauges/stream", app.address))
            .header("cookie", cookie)
            .send()
    };
    assert_eq!(stream(&cookie).await.unwrap().status(), 403);
    assert_eq!(stream("").await.unwrap().status(), 401);
}

#[tokio::test]
async fn taskserv_params_typed_in_the_form_reach_the_requested_event() {
    let app = app().await;
    let alice = app.user("alice@example.test", Role::User).await;
    let cookie = sign_in(&app, &alice.token).await;
    let (_, body) = page(&app, &cookie, "/console/vms/new").await;
    for shown in [
        "name=\"params.grafana.port\" value=\"3000\"",
        "id=\"param-grafana-port-help\"",
        "TCP port of Grafana",
        "name=\"params.k3s.cluster_init\"",
    ] {
        assert!(body.contains(shown), "{shown}: {body}");
    }
    let mut fields = vec![
        ("name", "params-vm"),
        ("template", "local/medium"),
        ("taskserv", "grafana"),
        ("params.grafana.port", "x"),
        ("params.grafana.grafana_version", "11.4.0"),
        ("params.redis.port", "6400"),
        ("ssh_public_key", SSH_KEY),
        ("networks", "192.0.2.0/24"),
        ("duration_hours", "4"),
    ];
    let response = post(&app, &cookie, "/console/vms", &fields).await;
    assert_eq!(response.status(), 422);
    let body = response.text().await.unwrap();
    assert!(body.contains("id=\"param-grafana-port-error\""), "{body}");
    assert!(
        body.contains("name=\"params.grafana.port\" value=\"x\""),
        "{body}"
    );
    assert!(
        !body.contains("id=\"refusal\""),
        "shown beside the param only: {body}"
    );

    fields[3] = ("params.grafana.port", "3005");
    let response = post(&app, &cookie, "/console/vms", &fields).await;
    assert_eq!(response.status(), 303);
    let to = location(&response);
    let id = to
        .trim_start_matches("/console/vms/")
        .split('?')
        .next()
        .unwrap();
    let events = app.events(id).await;
    let requested = events.iter().find(|e| e.kind == "Requested").unwrap();
    let plan = requested.data["spec"]["taskservs"].as_array().unwrap();
    let grafana = plan.iter().find(|t| t["name"] == "grafana").unwrap();
    assert_eq!(grafana["params"]["port"], 3005, "{grafana}");
    assert_eq!(grafana["params"]["grafana_version"], "11.4.0", "{grafana}");
    assert!(
        plan.iter().all(|t| t["name"] != "redis"),
        "an unticked one's params are not sent"
    );
}

/// A VM of `caller` on `local`/`small`, shown by the read model; its id.
async fn small_vm(caller: &Caller, name: &str) -> String {
    let body = vm_request(json!({"name": name, "template": "small"}));
    let vm: Value = caller.json("POST", "/api/v1/vms", Some(&body), 202).await;
    let id = vm["id"].as_str().unwrap().to_owned();
    let _: Value = caller
        .json("GET", &format!("/api/v1/vms/{id}"), None, 200)
        .await;
    id
}

/// The names of the VMs a list page shows, in order.
fn names(body: &str) -> Vec<String> {
    body.split("<tr data-vm=")
        .skip(1)
        .map(|row| {
            let link = row.split("</a>").next().unwrap();
            link.rsplit_once('>').unwrap().1.to_owned()
        })
        .collect()
}

#[tokio::test]
async fn the_vm_list_filters_by_status_provider_name_and_owner_and_pages() {
    let app = app().await;
    let alice = app.user("alice@example.test", Role::User).await;
    let bob = app.user("bob@example.test", Role::User).await;
    for name in ["web-a", "db-b", "web-c"] {
        small_vm(&alice, name).await;
    }
    small_vm(&bob, "bob-web").await;
    let cookie = sign_in(&app, &alice.token).await;
    let list = |query: &str| {
        let cookie = cookie.clone();
        let query = query.to_owned();
        let app = &app;
        async move { page(app, &cookie, &format!("/console/vms{query}")).await.1 }
    };
    assert_eq!(names(&list("").await), ["web-c", "db-b", "web-a"]);
    let body = list("?name=WEB").await;
    assert_eq!(names(&body), ["web-c", "web-a"]);
    assert!(
        body.contains("id=\"filter-name\" name=\"name\" value=\"WEB\""),
        "kept: {body}"
    );
    assert_eq!(
        names(&list("?status=requested&provider=local").await).len(),
        3
    );
    let body = list("?status=running").await;
    assert!(
        names(&body).is_empty() && body.contains("No VMs match"),
        "{body}"
    );
    // A user's owner filter is not hers to use: still only her VMs.
    assert_eq!(names(&list("?owner=bob%40example.test").await).len(), 3);

    // Pages of two, the filters kept in the "next" link.
    let body = list("?provider=local&limit=2").await;
    assert_eq!(names(&body), ["web-c", "db-b"]);
    let next = body
        .split("<a href=\"")
        .find(|h| h.contains("rel=\"next\""))
        .map(|h| {
            h.split('"')
                .next()
                .unwrap()
                .replace("&#38;", "&")
                .replace("&amp;", "&")
        })
        .unwrap_or_else(|| panic!("a next link: {body}"));
    let query = next.strip_prefix("/console/vms").unwrap();
    assert!(
        query.starts_with("?provider=local&limit=2&after="),
        "{next}"
    );
    let body = list(query).await;
    assert_eq!(names(&body), ["web-a"]);
    assert!(
        !body.contains("rel=\"next\"") && body.contains("First page"),
        "{body}"
    );

    // An admin filters by owner.
    let admin = sign_in(&app, &app.token).await;
    let (_, body) = page(&app, &admin, "/console/vms?owner=bob%40example.test").await;
    assert_eq!(names(&body), ["bob-web"]);
    let (_, body) = page(&app, &admin, "/console/vms?owner=nobody%40example.test").await;
    assert!(
        names(&body).is_empty() && body.contains("No user has the email"),
        "{body}"
    );
}
