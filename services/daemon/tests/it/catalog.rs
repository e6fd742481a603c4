//! The template catalog: the seed of the migrations, and administrators changing it.

use daemon::Roles;
use serde_json::{json, Value};

use crate::answers::Reply;
use crate::helpers::{spawn_app, spawn_app_with, TestApp};

const CLOUDS: [&str; 9] = [
    "nscale",
    "nrec-uio",
    "nrec-uib",
    "ibm-cloud",
    "google-cloud",
    "azure",
    "nrec",
    "aws",
    "upcloud",
];

/// The body of a `method` request of `body`, which must answer `status`. A change is
/// answered from its own events; this waits (with its position) until GETs show it too.
async fn send(app: &TestApp, method: &str, path: &str, body: Value, status: u16) -> Value {
    let reply = send_reply(app, method, path, &body).await;
    assert_eq!(reply.status, status, "{method} {path}: {}", reply.body);
    if let Some(position) = reply.position {
        let path = format!("/api/v1/admin/catalog/events?limit=1&min_position={position}");
        let _: Value = app.get_json(&path).await;
    }
    reply.json()
}

async fn send_reply(app: &TestApp, method: &str, path: &str, body: &Value) -> Reply {
    let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
    let response = app
        .client
        .request(method, format!("{}{path}", app.address))
        .bearer_auth(&app.token)
        .json(body)
        .send()
        .await
        .unwrap();
    Reply::of(response).await
}

async fn get_json(app: &TestApp, path: &str) -> Value {
    app.get_json(path).await
}

fn find<'a>(list: &'a Value, id: &str) -> &'a Value {
    list.as_array()
        .unwrap()
        .iter()
        .find(|item| item["id"] == id)
        .unwrap_or_else(|| panic!("{id} is listed"))
}

fn ids(list: &Value) -> Vec<String> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|item| item["id"].as_str().unwrap().to_owned())
        .collect()
}

async fn catalog_events(app: &TestApp) -> Vec<Value> {
    let events = get_json(app, "/api/v1/admin/catalog/events").await;
    events.as_array().unwrap().clone()
}

fn new_template() -> Value {
    json!({
        "provider": "hetzner", "id": "cx22", "name": "CX22",
        "flavor_name": "cx22", "image_name": "ubuntu-24.04",
        "cpu": 2, "ram_gb": 4, "storage_gb": 40, "tags": ["simple"],
    })
}

#[tokio::test]
async fn the_seeded_catalog_has_all_nine_clouds_with_their_templates() {
    let app = spawn_app().await;
    let providers = get_json(&app, "/api/v1/admin/providers").await;
    let mut expected: Vec<String> = CLOUDS.iter().map(|s| s.to_string()).collect();
    expected.push("local".into());
    assert_eq!(ids(&providers), expected);
    assert_eq!(find(&providers, "nrec")["name"], "NREC (Bergen)");
    assert_eq!(find(&providers, "upcloud")["sort_order"], 9);

    let templates = get_json(&app, "/api/v1/admin/templates").await;
    assert_eq!(templates.as_array().unwrap().len(), 47 + 4);
    for cloud in CLOUDS {
        let own = get_json(&app, &format!("/api/v1/admin/templates?provider={cloud}")).await;
        let simple = own.as_array().unwrap().iter().any(|t| {
            t["enabled"] == true && t["tags"].as_array().unwrap().contains(&json!("simple"))
        });
        assert!(simple, "{cloud} has an enabled simple template");
    }

    let nscale = get_json(&app, "/api/v1/admin/templates?provider=nscale").await;
    let gpu = find(&nscale, "gpu-xl-mi250x");
    assert_eq!(
        (&gpu["cpu"], &gpu["ram_gb"], &gpu["storage_gb"]),
        (&json!(128), &json!(2149), &json!(30730))
    );
    assert_eq!(gpu["flavor_name"], "g.128.mi250x.8");
    assert_eq!(gpu["image_name"], "ubuntu-24.04-amd-mi250-6.4.1");
    assert_eq!(gpu["username"], "naic-user");
    assert_eq!(gpu["tags"], json!(["simple", "gpu", "bare-metal"]));

    let uib = get_json(&app, "/api/v1/admin/templates?provider=nrec-uib").await;
    assert_eq!(find(&uib, "gpu-xl-l40s")["enabled"], false);
    assert_eq!(find(&uib, "simple-gpu-xl-l40s")["enabled"], true);
    assert_eq!(find(&uib, "standard-large")["username"], "cloud-user");

    let uio = get_json(&app, "/api/v1/admin/templates?provider=nrec-uio").await;
    let jupyter = find(&uio, "simple-standard-large-jupyter");
    assert_eq!(jupyter["tags"], json!(["simple", "jupyter-notebook"]));
    let google = get_json(&app, "/api/v1/admin/templates?provider=google-cloud").await;
    let xl = find(&google, "simple-standard-xl");
    assert_eq!(xl["gpu"], Value::Null);
    assert!(!xl["description"].as_str().unwrap().contains("with GPU"));
    let ibm = get_json(&app, "/api/v1/admin/templates?provider=ibm-cloud").await;
    assert_eq!(find(&ibm, "simple-power11-medium")["username"], "root");

    assert!(
        catalog_events(&app).await.is_empty(),
        "the seed is no event yet"
    );
}

#[tokio::test]
async fn an_admin_changes_the_catalog_and_each_change_is_an_event_of_the_admin() {
    let app = spawn_app().await;
    let body = json!({"id": "hetzner", "name": "Hetzner"});
    let created = send(&app, "POST", "/api/v1/admin/providers", body, 201).await;
    assert_eq!(
        created,
        json!({"id": "hetzner", "name": "Hetzner", "enabled": true, "sort_order": 101})
    );
    let path = "/api/v1/admin/templates";
    let mut enabled = new_template();
    enabled["enabled"] = json!(true);
    let refused = send(&app, "POST", path, enabled, 422).await;
    assert!(
        refused["detail"].as_str().unwrap().contains("enabled"),
        "{refused}"
    );
    let template = send(&app, "POST", path, new_template(), 201).await;
    assert_eq!(template["username"], "ubuntu");
    assert_eq!(template["sort_order"], 1);
    assert_eq!(
        template["enabled"], false,
        "hetzner is in no registry, so its templates start disabled"
    );
    let body = json!({"provider": "hetzner", "id": "cx32", "name": "CX32", "flavor_name": "cx32",
        "image_name": "ubuntu-24.04", "cpu": 4, "ram_gb": 8, "storage_gb": 80});
    send(&app, "POST", path, body, 201).await;

    let path = "/api/v1/admin/templates/hetzner/cx22";
    let body = json!({"cpu": 3, "gpu": "1 x NVIDIA L4", "description": "Small."});
    let updated = send(&app, "PATCH", path, body, 200).await;
    assert_eq!(
        (&updated["cpu"], &updated["gpu"]),
        (&json!(3), &json!("1 x NVIDIA L4"))
    );
    assert_eq!(updated["ram_gb"], 4, "fields left out stay");
    let updated = send(&app, "PATCH", path, json!({"gpu": null}), 200).await;
    assert_eq!(updated["gpu"], Value::Null);
    // Users see what admins change (local needs no credentials, so it is available).
    let path = "/api/v1/admin/templates/local/broken";
    let body = json!({"enabled": false});
    let disabled = send(&app, "PATCH", path, body, 200).await;
    assert_eq!(disabled["enabled"], false);
    let public = get_json(&app, "/api/v1/providers/local/templates").await;
    assert_eq!(ids(&public), ["small", "medium", "large"]);

    let path = "/api/v1/admin/providers/hetzner";
    let body = json!({"name": "Hetzner Cloud", "enabled": false});
    let provider = send(&app, "PATCH", path, body, 200).await;
    assert_eq!(
        (&provider["name"], &provider["enabled"]),
        (&json!("Hetzner Cloud"), &json!(false))
    );

    let mut order = ids(&get_json(&app, "/api/v1/admin/providers").await);
    order.reverse();
    let path = "/api/v1/admin/providers/order";
    let reordered = send(&app, "PUT", path, json!({"ids": order}), 200).await;
    assert_eq!(ids(&reordered), order);
    assert_eq!(ids(&get_json(&app, "/api/v1/admin/providers").await), order);
    assert_eq!(find(&reordered, "hetzner")["sort_order"], 1);
    let path = "/api/v1/admin/providers/hetzner/templates/order";
    let body = json!({"ids": ["cx32", "cx22"]});
    let templates = send(&app, "PUT", path, body, 200).await;
    assert_eq!(ids(&templates), ["cx32", "cx22"]);

    let events = catalog_events(&app).await;
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        [
            "SeedImported",
            "ProviderCreated",
            "TemplateCreated",
            "TemplateCreated",
            "TemplateUpdated",
            "TemplateUpdated",
            "TemplateEnabledChanged",
            "ProviderUpdated",
            "ProviderEnabledChanged",
            "ProvidersReordered",
            "TemplatesReordered",
        ]
    );
    assert!(events.iter().all(|e| e["actor"] == "admin"), "{events:?}");
    let sequences: Vec<u64> = events
        .iter()
        .map(|e| e["sequence"].as_u64().unwrap())
        .collect();
    assert_eq!(sequences, (1..=11).collect::<Vec<u64>>());
    assert_eq!(events[0]["data"]["providers"].as_array().unwrap().len(), 10);
    assert_eq!(events[5]["data"]["changes"], json!({"gpu": null}));
}

#[tokio::test]
async fn bad_catalog_input_is_rejected_naming_the_field_and_writes_no_event() {
    let app = spawn_app().await;
    let providers = "/api/v1/admin/providers";
    let templates = "/api/v1/admin/templates";
    let with = |fields: Value| {
        let mut body = new_template();
        body["provider"] = json!("nscale");
        for (k, v) in fields.as_object().unwrap() {
            body[k] = v.clone();
        }
        body
    };
    let cases = [
        (providers, json!({"id": "Bad Id", "name": "X"}), "id"),
        (providers, json!({"id": "x", "name": " "}), "name"),
        (providers, json!({"id": "x"}), "name"),
        (
            providers,
            json!({"id": "x", "name": "X", "colour": "red"}),
            "colour",
        ),
        (templates, with(json!({"cpu": 0})), "cpu"),
        (templates, with(json!({"ram_gb": -1})), "ram_gb"),
        (templates, with(json!({"storage_gb": 0})), "storage_gb"),
        (templates, with(json!({"cpu": "many"})), "cpu"),
        (templates, with(json!({"id": "UPPER"})), "id"),
        (templates, with(json!({"provider": "nowhere"})), "provider"),
        (templates, with(json!({"flavor_name": ""})), "flavor_name"),
        (templates, with(json!({"tags": ["Not A Tag"]})), "tags"),
    ];
    for (path, body, field) in cases {
        let detail = send(&app, "POST", path, body.clone(), 422).await;
        assert_eq!(detail["code"], "invalid_field", "{body}");
        let text = detail["detail"].as_str().unwrap();
        assert!(text.contains(field), "{body}: {detail}");
    }
    let patches = [
        (
            "/api/v1/admin/templates/nscale/standard-small",
            json!({"cpu": 0}),
            "cpu",
        ),
        (
            "/api/v1/admin/providers/nscale",
            json!({"name": ""}),
            "name",
        ),
    ];
    for (path, body, field) in patches {
        let detail = send(&app, "PATCH", path, body.clone(), 422).await;
        assert!(
            detail["detail"].as_str().unwrap().contains(field),
            "{detail}"
        );
    }
    let orders = [
        ("/api/v1/admin/providers/order", json!({"ids": ["nscale"]})),
        ("/api/v1/admin/providers/order", json!({"ids": ["Bad Id"]})),
        (
            "/api/v1/admin/providers/aws/templates/order",
            json!({"ids": ["standard-large", "standard-large"]}),
        ),
    ];
    for (path, body) in orders {
        let detail = send(&app, "PUT", path, body, 422).await;
        assert!(
            detail["detail"].as_str().unwrap().starts_with("ids:"),
            "{detail}"
        );
    }

    let duplicate = json!({"id": "nscale", "name": "Again"});
    send(&app, "POST", providers, duplicate, 409).await;
    let duplicate = with(json!({"id": "standard-small"}));
    send(&app, "POST", templates, duplicate, 409).await;
    let unknown = [
        ("/api/v1/admin/providers/nowhere", json!({"enabled": false})),
        (
            "/api/v1/admin/providers/Not%20An%20Id",
            json!({"enabled": false}),
        ),
        ("/api/v1/admin/templates/nscale/nothing", json!({"cpu": 2})),
        ("/api/v1/admin/templates/nowhere/small", json!({})),
    ];
    for (path, body) in unknown {
        send(&app, "PATCH", path, body, 404).await;
    }
    send(
        &app,
        "PUT",
        "/api/v1/admin/providers/nowhere/templates/order",
        json!({"ids": []}),
        404,
    )
    .await;

    assert!(catalog_events(&app).await.is_empty());
}

/// The catalog tables, every column, in a fixed order.
async fn catalog_rows(app: &TestApp) -> (Vec<Value>, Vec<Value>) {
    let query =
        |table: &str, order: &str| format!("SELECT to_jsonb(t) FROM {table} t ORDER BY {order}");
    let providers = store::sqlx::query_scalar(&query("providers", "id"))
        .fetch_all(&app.pool)
        .await
        .unwrap();
    let templates = store::sqlx::query_scalar(&query("templates", "provider_id, id"))
        .fetch_all(&app.pool)
        .await
        .unwrap();
    (providers, templates)
}

#[tokio::test]
async fn rebuilding_the_projections_gives_the_same_catalog_rows() {
    let mut app = spawn_app().await;
    let body = json!({"id": "hetzner", "name": "Hetzner", "sort_order": 3});
    send(&app, "POST", "/api/v1/admin/providers", body, 201).await;
    send(&app, "POST", "/api/v1/admin/templates", new_template(), 201).await;
    let path = "/api/v1/admin/templates/hetzner/cx22";
    send(
        &app,
        "PATCH",
        path,
        json!({"cpu": 3, "enabled": false}),
        200,
    )
    .await;
    let path = "/api/v1/admin/templates/nscale/standard-small";
    send(&app, "PATCH", path, json!({"name": "Small"}), 200).await;
    let path = "/api/v1/admin/providers/nrec-uib/templates/order";
    let mut order = ids(&get_json(&app, "/api/v1/admin/templates?provider=nrec-uib").await);
    order.rotate_left(2);
    send(&app, "PUT", path, json!({"ids": order}), 200).await;
    send(
        &app,
        "PATCH",
        "/api/v1/admin/providers/azure",
        json!({"enabled": false}),
        200,
    )
    .await;
    let before = catalog_rows(&app).await;
    let refused = projector::rebuild(&app.pool).await.unwrap_err();
    assert!(
        refused.to_string().contains("a projector is running"),
        "{refused}"
    );
    app.stop().await;

    // Rows a rebuild must restore: one an admin changed, one only the seed import describes.
    store::sqlx::query(
        "UPDATE templates SET name = 'tampered', cpu = 99
         WHERE (provider_id, id) IN (('nscale', 'standard-small'), ('aws', 'gpu-xl-a10g'))",
    )
    .execute(&app.pool)
    .await
    .unwrap();
    projector::rebuild(&app.pool).await.unwrap();
    assert_eq!(catalog_rows(&app).await, before);
}

#[tokio::test]
async fn admin_changes_are_answered_from_their_events_while_the_tables_lag() {
    let app = spawn_app_with(Roles {
        projector: false,
        dispatcher: false,
        ..Roles::ALL
    })
    .await;
    let providers = "/api/v1/admin/providers";
    let body = json!({"id": "hetzner", "name": "Hetzner", "sort_order": 7});
    let created = send_reply(&app, "POST", providers, &body).await;
    assert_eq!(created.status, 201, "{}", created.body);
    assert_eq!(
        created.json::<Value>(),
        json!({"id": "hetzner", "name": "Hetzner", "enabled": true, "sort_order": 7})
    );
    let position = created.position.expect("the change's position");
    let body = json!({"name": "Hetzner Cloud", "enabled": false});
    let patched = send_reply(&app, "PATCH", &format!("{providers}/hetzner"), &body).await;
    assert_eq!(patched.status, 200, "{}", patched.body);
    assert_eq!(
        patched.json::<Value>(),
        json!({"id": "hetzner", "name": "Hetzner Cloud", "enabled": false, "sort_order": 7})
    );
    assert!(patched.position.unwrap() > position);

    let templates = "/api/v1/admin/templates";
    let mut template = new_template();
    template["sort_order"] = json!(3);
    let created = send_reply(&app, "POST", templates, &template).await;
    assert_eq!(created.status, 201, "{}", created.body);
    let created: Value = created.json();
    assert_eq!(
        (&created["id"], &created["cpu"]),
        (&json!("cx22"), &json!(2))
    );
    let order = "/api/v1/admin/providers/hetzner/templates/order";
    let reordered = send_reply(&app, "PUT", order, &json!({"ids": ["cx22"]})).await;
    assert_eq!(reordered.status, 200, "{}", reordered.body);
    let reordered: Value = reordered.json();
    assert_eq!(ids(&reordered), ["cx22"]);
    assert_eq!(reordered[0]["sort_order"], 1);

    // The tables do not show the provider; a GET that asks for it says so, and is 503.
    assert!(find_opt(&get_json(&app, providers).await, "hetzner").is_none());
    let response = app
        .get(&format!("{providers}?min_position={position}"))
        .send()
        .await
        .unwrap();
    let read = Reply::of(response).await;
    assert_eq!(read.status, 503, "{}", read.body);
}

fn find_opt<'a>(list: &'a Value, id: &str) -> Option<&'a Value> {
    list.as_array()
        .unwrap()
        .iter()
        .find(|item| item["id"] == id)
}

#[tokio::test]
async fn an_admin_validates_the_catalog_against_the_provider_registry() {
    let app = spawn_app().await;
    let checked = get_json(&app, "/api/v1/admin/providers/validate").await;
    let hcl = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../hcl"));
    let registry = registry::Registry::load(hcl).unwrap();
    assert_eq!(checked["providers"], registry.providers.len());
    assert_eq!(checked["ok"], true, "{checked}");
    assert_eq!(checked["problems"], json!([]));
}
