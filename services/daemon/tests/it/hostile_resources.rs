//! Resources a caller could make the daemon hold: `/metrics` series, and VMs whose job
//! messages could never be published.

use domain::identity::Role;
use serde_json::{json, Value};

use crate::helpers::{try_spawn_app, vm_request, TestApp, SSH_KEY};
use crate::hostile_input::without_runners;
use crate::private_nats::PrivateNats;

async fn metrics(app: &TestApp) -> String {
    let response = app.client.get(format!("{}/metrics", app.address)).send();
    response.await.unwrap().text().await.unwrap()
}

/// The HTTP series of `/metrics` that made-up methods and unknown paths could add: those
/// counted as `other`, and those of unknown paths. (Other tests of this process add series
/// of their own routes meanwhile.)
async fn open_series(app: &TestApp) -> Vec<String> {
    metrics(app)
        .await
        .lines()
        .filter(|l| l.starts_with("provisioning_http_"))
        .filter(|l| l.contains(r#"method="other""#) || l.contains(r#"route="unmatched""#))
        .map(str::to_owned)
        .collect()
}

/// A method or path segment of `len` letters and digits, different each call.
fn made_up(seed: &mut u64, len: usize) -> String {
    (0..len)
        .map(|_| {
            *seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
            alphabet[(*seed >> 33) as usize % alphabet.len()] as char
        })
        .collect()
}

#[tokio::test]
async fn a_thousand_made_up_methods_and_paths_add_no_series_to_the_metrics() {
    let app = try_spawn_app(without_runners(), |_| {}).await.unwrap();
    let vm = app.create_ok(json!({})).await;
    let send = |method: String, path: String| {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        app.client
            .request(method, format!("{}{path}", app.address))
            .bearer_auth(&app.token)
            .send()
    };
    // Once each kind of request first: the series they count in exist from then on.
    let mut seed = 7;
    for path in ["/nowhere".to_owned(), format!("/api/v1/vms/{vm}")] {
        send(format!("XYZ{}", made_up(&mut seed, 6)), path.clone())
            .await
            .unwrap();
        send("GET".into(), format!("/{}", made_up(&mut seed, 8)))
            .await
            .unwrap();
    }
    let before = open_series(&app).await;

    let mut sent = vec![];
    for i in 0..1000 {
        let method = format!("XYZ{}", made_up(&mut seed, 6));
        let path = match i % 3 {
            0 => format!("/{}/{}", made_up(&mut seed, 8), made_up(&mut seed, 4)),
            1 => format!("/api/v1/vms/{vm}"),
            _ => format!("/api/v1/{}", made_up(&mut seed, 8)),
        };
        let made_up = i % 3 != 2;
        let method = if made_up { method } else { "GET".to_owned() };
        let status = send(method.clone(), path.clone()).await.unwrap().status();
        assert!(status.is_client_error(), "{method} {path}: {status}");
        sent.push((made_up.then_some(method), path));
    }

    let after = open_series(&app).await;
    assert_eq!(after.len(), before.len(), "{after:#?}");
    let text = metrics(&app).await;
    for (method, path) in &sent {
        if let Some(method) = method {
            assert!(!text.contains(method.as_str()), "{method} counted by name");
        }
        if !path.starts_with("/api/v1/vms/") {
            assert!(!text.contains(path.as_str()), "{path} counted by name");
        }
    }
}

#[tokio::test]
async fn a_create_whose_job_message_would_not_fit_a_nats_message_is_413_and_records_nothing() {
    // A server that carries at most 16 KiB per message (the platform keeps 4 KiB of it for
    // headers and subject): a long key comment makes a spec too large for it.
    let nats = PrivateNats::start_with_max_payload(16 * 1024).await;
    let app = try_spawn_app(without_runners(), |c| c.nats_url = nats.url())
        .await
        .unwrap();
    let user = app.user("mallory@example.org", Role::User).await;
    let before = app.count_events().await;

    let long_key = format!("{SSH_KEY}{}", "x".repeat(13 * 1024));
    let request = vm_request(json!({"ssh_public_key": long_key}));
    let response = user.send("POST", "/api/v1/vms", Some(&request)).await;
    assert_eq!(response.status(), 413);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["code"], "too_large", "{body}");
    assert!(
        body["detail"].as_str().unwrap().contains("job message"),
        "{body}"
    );
    assert_eq!(app.count_events().await, before);

    // An ordinary one fits, and its job is published (not parked).
    let vm: Value = user
        .json("POST", "/api/v1/vms", Some(&vm_request(json!({}))), 202)
        .await;
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let published = app
            .stream_messages()
            .await
            .iter()
            .any(|m| m.aggregate_id == vm["id"] && m.event_type == "JobQueued");
        if published {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "JobQueued never published"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    let parked: i64 = store::sqlx::query_scalar("SELECT count(*) FROM dead_letters")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(parked, 0);
}
