//! The NAIC face's answers, field by field as NAIC's frontend reads them (types,
//! nullability, arrays never null), its statuses, and its access rules: another user's VM
//! is not found, admin routes are refused to users. No runners: VMs stay requested.

use daemon::Roles;
use domain::identity::Role;
use serde_json::{json, Value};

use crate::helpers::{try_spawn_app, TestApp};
use crate::users::Caller;

async fn app() -> TestApp {
    let roles = Roles {
        dispatcher: false,
        ..Roles::ALL
    };
    try_spawn_app(roles, |_| {}).await.expect("the app starts")
}

fn is_str(v: &Value) -> bool {
    v.is_string()
}

/// A template as NAIC's Create page reads it; `with_provider` when it carries its provider.
pub(crate) fn assert_template(t: &Value, with_provider: bool) {
    for field in [
        "templateId",
        "templateName",
        "falvorName",
        "os",
        "description",
    ] {
        assert!(is_str(&t[field]), "{field}: {t}");
    }
    for field in ["cpu", "ram", "storage"] {
        assert!(t[field].is_i64(), "{field}: {t}");
    }
    assert!(t["enabled"].is_boolean(), "{t}");
    assert!(t["metadata"]["tags"].is_array(), "tags: {t}");
    assert!(is_str(&t["metadata"]["username"]), "username: {t}");
    let id = t["templateId"].as_str().unwrap();
    assert_eq!(id.split_once(':').unwrap().0, t["providerId"], "{t}");
    if with_provider {
        let p = &t["provider"];
        assert!(
            is_str(&p["providerId"]) && is_str(&p["providerName"]),
            "{t}"
        );
        assert!(p["displayOrder"].is_i64(), "{t}");
    } else {
        assert!(t.get("provider").is_none(), "{t}");
    }
}

/// A VM as the dashboard and detail page read it.
pub(crate) fn assert_vm(vm: &Value) {
    for field in [
        "vmId",
        "userId",
        "templateId",
        "vmName",
        "status",
        "createdAt",
    ] {
        assert!(is_str(&vm[field]), "{field}: {vm}");
    }
    for field in ["ipv4Address", "ipv6Address", "startedAt"] {
        assert!(
            vm[field].is_null() || vm[field].is_string(),
            "{field}: {vm}"
        );
    }
    assert!(vm["duration"].is_i64(), "{vm}");
    assert!(vm["ipRanges"].is_array(), "{vm}");
    assert!(vm["metadata"]["archived"].is_boolean(), "{vm}");
    assert!(vm["metadata"]["applications"].is_array(), "{vm}");
    assert_template(&vm["vmTemplate"], true);
}

async fn create(caller: &Caller, body: Value, status: u16) -> Value {
    caller
        .json("POST", "/api/vm/create", Some(&body), status)
        .await
}

fn request(key: &Value, name: &str) -> Value {
    json!({
        "vmName": name,
        "sshKeyId": key["keyId"],
        "vmTemplateId": "local:small",
        "duration": 6,
        "ipRanges": ["129.240.0.0/16", "193.157.0.0/16"],
    })
}

#[tokio::test]
async fn the_naic_routes_answer_a_user_in_naics_shapes() {
    let app = app().await;
    let ada = app.user("ada@example.org", Role::User).await;

    let offered: Value = ada.json("GET", "/api/vm/templates", None, 200).await;
    let templates = offered["vmTemplates"].as_array().unwrap();
    assert!(!templates.is_empty());
    templates.iter().for_each(|t| assert_template(t, true));
    assert!(templates.iter().any(|t| t["templateId"] == "local:small"));
    let me: Value = ada.json("GET", "/api/v1/me", None, 200).await;
    let quota = &offered["quota"];
    assert_eq!(quota["allocatedQuota"], me["limits"]["vms"]["value"]);
    assert_eq!(quota["remainingQuota"], me["limits"]["vms"]["value"]);

    let key: Value = ada
        .json(
            "POST",
            "/api/vm/ssh/create",
            Some(&json!({"keyName": "my-key"})),
            200,
        )
        .await;
    assert!(key["privateKey"].as_str().unwrap().contains("PRIVATE KEY"));
    let keys: Value = ada.json("GET", "/api/vm/ssh/keys", None, 200).await;
    assert_eq!(keys.as_array().unwrap().len(), 1);
    assert_eq!(keys[0]["keyId"], key["keyId"]);
    assert_eq!(keys[0]["name"], "my-key");
    assert_eq!(keys[0]["userId"], ada.id.as_str());
    assert!(keys[0]["publicKey"]
        .as_str()
        .unwrap()
        .starts_with("ssh-ed25519 "));

    let id = create(&ada, request(&key, "naic-1"), 200).await;
    let id = id.as_str().expect("a bare JSON string");
    // The same VM through /api/v1, at once.
    let ours: Value = ada
        .json("GET", &format!("/api/v1/vms/{id}"), None, 200)
        .await;
    assert_eq!(ours["name"], "naic-1");

    let list: Value = ada.json("GET", "/api/vm", None, 200).await;
    let list = list.as_array().expect("a bare array");
    assert_eq!(list.len(), 1);
    assert_vm(&list[0]);
    assert!(list[0].get("publicKey").is_none());

    let vm: Value = ada.json("GET", &format!("/api/vm/{id}"), None, 200).await;
    assert_vm(&vm);
    assert_eq!(vm["vmId"], id);
    assert_eq!(vm["userId"], ada.id.as_str());
    assert_eq!(vm["vmName"], "naic-1");
    assert_eq!(vm["status"], "TO_BE_PROVISIONED");
    assert_eq!(vm["templateId"], "local:small");
    assert_eq!(vm["duration"], 6);
    assert_eq!(vm["ipRanges"], json!(["129.240.0.0/16", "193.157.0.0/16"]));
    assert_eq!(
        vm["metadata"],
        json!({"archived": false, "applications": []})
    );
    assert_eq!(vm["vmTemplate"]["provider"]["providerId"], "local");
    assert_eq!(vm["publicKeyId"], key["keyId"]);
    assert_eq!(vm["publicKey"]["keyId"], key["keyId"]);
    assert_eq!(vm["publicKey"]["name"], "my-key");
    // The remaining-time bar (`startedAt + duration`) ends at the platform's expiry.
    if let Some(expires) = ours["expires_at"].as_str() {
        let parse = |t: &str| {
            time::OffsetDateTime::parse(t, &time::format_description::well_known::Rfc3339).unwrap()
        };
        let started = parse(vm["startedAt"].as_str().unwrap());
        assert_eq!(started + time::Duration::hours(6), parse(expires));
    }

    // Not destroyed yet: no archive, with a message the frontend shows.
    let refused: Value = ada
        .json("PUT", &format!("/api/vm/archive/{id}"), None, 409)
        .await;
    assert!(refused["message"].is_string(), "{refused}");
    let done: Value = ada
        .json("DELETE", &format!("/api/vm/destroy/{id}"), None, 200)
        .await;
    assert_eq!(done, json!({"status": "success"}));
    let vm: Value = ada.json("GET", &format!("/api/vm/{id}"), None, 200).await;
    assert_ne!(vm["status"], "TO_BE_PROVISIONED", "{vm}");
}

#[tokio::test]
async fn a_request_the_platform_refuses_is_a_4xx_with_a_message_naming_naics_field() {
    let app = app().await;
    let ada = app.user("ada@example.org", Role::User).await;
    let key: Value = ada
        .json(
            "POST",
            "/api/vm/ssh/create",
            Some(&json!({"keyName": "k1"})),
            200,
        )
        .await;
    let mut wrong = request(&key, "ok-name");
    wrong["vmTemplateId"] = json!("no-such-template");
    let refused = create(&ada, wrong, 422).await;
    assert!(refused["message"]
        .as_str()
        .unwrap()
        .starts_with("vmTemplateId: "));
    let mut wrong = request(&key, "ok-name");
    wrong["duration"] = json!(0);
    let refused = create(&ada, wrong, 422).await;
    assert!(refused["message"]
        .as_str()
        .unwrap()
        .starts_with("duration: "));
    let mut wrong = request(&key, "ok-name");
    wrong["sshKeyId"] = json!("not-a-key");
    let refused = create(&ada, wrong, 422).await;
    assert!(refused["message"]
        .as_str()
        .unwrap()
        .starts_with("sshKeyId: "));
    let refused: Value = ada
        .json("POST", "/api/vm/create", Some(&json!({"vmName": "x"})), 422)
        .await;
    assert!(refused["message"].is_string(), "{refused}");
    assert!(ada.json::<Value>("GET", "/api/vm", None, 200).await == json!([]));

    let anonymous = app.with_token("");
    let refused: Value = anonymous.json("GET", "/api/vm", None, 401).await;
    assert!(refused["message"].is_string(), "{refused}");
}

#[tokio::test]
async fn another_users_vm_is_not_found_and_admin_routes_are_refused_to_users() {
    let app = app().await;
    let ada = app.user("ada@example.org", Role::User).await;
    let bob = app.user("bob@example.org", Role::User).await;
    let root = app.user("root@example.org", Role::Admin).await;
    let key: Value = ada
        .json(
            "POST",
            "/api/vm/ssh/create",
            Some(&json!({"keyName": "k1"})),
            200,
        )
        .await;
    let id = create(&ada, request(&key, "adas"), 200).await;
    let id = id.as_str().unwrap();

    let none: Value = bob.json("GET", "/api/vm", None, 200).await;
    assert_eq!(none, json!([]));
    for (method, path) in [
        ("GET", format!("/api/vm/{id}")),
        ("DELETE", format!("/api/vm/destroy/{id}")),
        ("PUT", format!("/api/vm/archive/{id}")),
        ("GET", "/api/vm/not-a-uuid".to_owned()),
    ] {
        let refused: Value = bob.json(method, &path, None, 404).await;
        assert!(refused["message"].is_string(), "{method} {path}: {refused}");
    }
    // Bob's key list is his own (empty), and Ada's key is no key of his.
    let keys: Value = bob.json("GET", "/api/vm/ssh/keys", None, 200).await;
    assert_eq!(keys, json!([]));
    let stolen = create(&bob, request(&key, "bobs"), 422).await;
    assert!(stolen["message"]
        .as_str()
        .unwrap()
        .starts_with("sshKeyId: "));

    let admin_routes = [
        "/api/vm/providers",
        "/api/vm/providers/local",
        "/api/vm/providers/local/templates",
        "/api/vm/templates/local:small",
        "/api/user/all",
    ];
    for path in admin_routes {
        let refused: Value = ada.json("GET", path, None, 403).await;
        assert!(refused["message"].is_string(), "{path}: {refused}");
    }

    let providers: Value = root.json("GET", "/api/vm/providers", None, 200).await;
    let local = providers
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["providerId"] == "local")
        .expect("local is listed");
    assert!(local["providerName"].is_string() && local["displayOrder"].is_i64());
    assert!(local["description"].is_null() && local["enabled"] == true);
    let one: Value = root.json("GET", "/api/vm/providers/local", None, 200).await;
    assert_eq!(&one, local);
    let templates: Value = root
        .json("GET", "/api/vm/providers/local/templates", None, 200)
        .await;
    let templates = templates.as_array().unwrap();
    assert!(!templates.is_empty());
    templates.iter().for_each(|t| assert_template(t, true));
    let small: Value = root
        .json("GET", "/api/vm/templates/local:small", None, 200)
        .await;
    assert_template(&small, false);
    root.json::<Value>("GET", "/api/vm/templates/local:nothing", None, 404)
        .await;
    root.json::<Value>("GET", "/api/vm/providers/nowhere", None, 404)
        .await;
    let users: Value = root.json("GET", "/api/user/all", None, 200).await;
    let ada_row = users
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["email"] == "ada@example.org")
        .expect("ada is listed");
    assert_eq!(ada_row["userId"], ada.id.as_str());
    assert_eq!(ada_row["userType"], "USER");
    assert_eq!(ada_row["status"], "ACTIVE");
    let root_row = users
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["email"] == "root@example.org")
        .unwrap();
    assert_eq!(root_row["userType"], "ADMIN");
    // The platform's access rules: an admin may read any user's VM.
    let vm: Value = root.json("GET", &format!("/api/vm/{id}"), None, 200).await;
    assert_eq!(vm["publicKey"]["name"], "k1");
}
