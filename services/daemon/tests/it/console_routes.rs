//! The console's routes in one table: every page asks a visitor to sign in, every form
//! is refused from another site's page (or with no origin), changing nothing.

use domain::identity::Role;
use serde_json::Value;

use crate::console::{app, browser, page, sign_in, vm_of};

/// Every console route but the sign-in form and the assets: a page asks a visitor to sign
/// in (`401` with the form; the streams and the audit export a bare `401`), a form sent from another site's page
/// is refused (`403`) before anything else is looked at. Admin pages are in
/// `another_users_vm_and_the_admin_pages_are_closed_to_a_user`.
const PAGES: [&str; 24] = [
    "/console/admin/catalog",
    "/console/admin/catalog/new-provider",
    "/console/admin/catalog/new-template",
    "/console/admin/catalog/providers/local",
    "/console/admin/catalog/templates/local/small",
    "/console/admin/gauges",
    "/console/admin/audit",
    "/console/vms/{vm}?at=1",
    "/console/vms/{vm}?at=yesterday",
    "/console/vms/{vm}/jobs/1",
    "/console/vms/{vm}/history",
    "/console",
    "/console/vms",
    "/console/vms/new",
    "/console/vms/{vm}",
    "/console/keys",
    "/console/tokens",
    "/console/limits",
    "/console/clusters",
    "/console/clusters/new",
    "/console/clusters/{id}",
    "/console/admin/users",
    "/console/admin/policies",
    "/console/admin/dead-letters",
];
const FORMS: [&str; 24] = [
    "/console/admin/catalog",
    "/console/admin/catalog/new-provider",
    "/console/admin/catalog/new-template",
    "/console/admin/catalog/providers/local",
    "/console/admin/catalog/templates/local/small",
    "/console/vms",
    "/console/vms/{vm}/extend",
    "/console/vms/{vm}/destroy",
    "/console/vms/{vm}/refresh",
    "/console/vms/{vm}/retry",
    "/console/vms/{vm}/jobs/1/cancel",
    "/console/vms/{vm}/jobs/1/force-cancel",
    "/console/clusters",
    "/console/clusters/{id}/scale",
    "/console/clusters/{id}/destroy",
    "/console/keys",
    "/console/keys/generate",
    "/console/keys/{id}/delete",
    "/console/tokens",
    "/console/tokens/{id}/revoke",
    "/console/admin/users/{id}",
    "/console/admin/policies/reload",
    "/console/admin/dead-letters/1/replay",
    "/console/sign-out",
];

#[tokio::test]
async fn every_page_asks_for_sign_in_and_every_form_for_this_sites_origin() {
    let app = app().await;
    let alice = app.user("alice@example.test", Role::User).await;
    let vm = vm_of(&alice, "alice-vm").await;
    let cookie = sign_in(&app, &alice.token).await;
    let id = uuid::Uuid::new_v4().to_string();
    let fill = |path: &str| path.replace("{vm}", &vm).replace("{id}", &id);
    for path in PAGES {
        let (status, body) = page(&app, "", &fill(path)).await;
        assert_eq!(status, 401, "{path}");
        assert!(
            body.contains("action=\"/console/sign-in\""),
            "{path}: {body}"
        );
    }
    for path in [
        "/console/streams/vms",
        "/console/streams/vms/{vm}",
        "/console/admin/gauges/stream",
        "/console/streams/admin",
        "/console/admin/audit/export",
    ] {
        let response = browser()
            .get(format!("{}{}", app.address, fill(path)))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 401, "{path}");
    }
    for path in FORMS {
        for origin in [Some("https://elsewhere.test"), None] {
            let mut request = browser()
                .post(format!("{}{}", app.address, fill(path)))
                .header("cookie", &cookie);
            if let Some(origin) = origin {
                request = request.header("origin", origin);
            }
            let response = request.form(&[("hours", "1")]).send().await.unwrap();
            assert_eq!(response.status(), 403, "{path} from {origin:?}");
        }
    }
    // Nothing was changed by those refusals.
    let vm: Value = alice
        .json("GET", &format!("/api/v1/vms/{vm}"), None, 200)
        .await;
    assert_eq!(vm["status"], "requested", "{vm}");
}
