//! Read-your-writes without positions: a client that knows nothing of `min_position` (the
//! NAIC frontend, a new user's script) creates a VM and reads at once, on either daemon of
//! one deployment, and its VM is there.

use daemon::Roles;
use domain::identity::Role;
use serde_json::Value;

use crate::helpers::{spawn_app_with, vm_request, TestApp};

/// A user's token and what they read with: a plain client that sends no position.
struct Plain {
    token: String,
    client: reqwest::Client,
}

impl Plain {
    async fn send(&self, request: reqwest::RequestBuilder) -> (u16, Value) {
        let response = request.bearer_auth(&self.token).send().await.unwrap();
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    async fn get(&self, daemon: &TestApp, path: &str) -> (u16, Value) {
        let url = format!("{}{path}", daemon.address);
        self.send(self.client.get(url)).await
    }
}

#[tokio::test]
async fn fifty_users_each_read_their_new_vm_at_once_on_either_daemon_without_positions() {
    // No dispatcher: the reads are the point, not fifty Terraform runs.
    let roles = Roles {
        dispatcher: false,
        ..Roles::ALL
    };
    let first = spawn_app_with(roles).await;
    let second = first.spawn_replica_as(roles, |_| {}).await;
    let daemons = [&first, &second];

    let mut users = Vec::new();
    for i in 0..50 {
        let user = first
            .user(&format!("reader-{i}@example.org"), Role::User)
            .await;
        users.push(Plain {
            token: user.token,
            client: reqwest::Client::new(),
        });
    }

    let checks = users.iter().enumerate().map(|(i, user)| async move {
        let (here, there) = (daemons[i % 2], daemons[(i + 1) % 2]);
        let body = vm_request(serde_json::json!({"name": format!("mine-{i}")}));
        let url = format!("{}/api/v1/vms", here.address);
        let (status, created) = user.send(user.client.post(url).json(&body)).await;
        assert_eq!(status, 202, "user {i}: {created}");
        let id = created["id"].as_str().unwrap().to_owned();

        let (status, list) = user.get(there, "/api/v1/vms").await;
        assert_eq!(status, 200, "user {i}: {list}");
        let listed = list["items"].as_array().unwrap();
        assert!(
            listed.iter().any(|vm| vm["id"] == id.as_str()),
            "user {i}: the list on the other daemon misses {id}: {list}"
        );

        let (status, vm) = user.get(here, &format!("/api/v1/vms/{id}")).await;
        assert_eq!(status, 200, "user {i}: {vm}");
        assert_eq!(vm["id"], id.as_str());

        let (status, jobs) = user.get(there, &format!("/api/v1/vms/{id}/jobs")).await;
        assert_eq!(status, 200, "user {i}: {jobs}");
        assert!(
            !jobs.as_array().unwrap().is_empty(),
            "user {i}: no jobs of {id} on the other daemon: {jobs}"
        );
    });
    futures::future::join_all(checks).await;
}
