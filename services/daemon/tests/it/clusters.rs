//! Clusters end to end on `local`, with real Terraform and the simulated boot: a `k3s-ha`
//! makes its seed, then its servers, then its agents, each stage only once the gate before
//! it passed, and passes the seed's reported URL to the rest; a `ready` cluster scales up
//! and down and is destroyed whole; a gate that times out rolls the cluster back.

use std::time::Duration;

use domain::identity::Role;
use serde_json::{json, Value};

use crate::cluster_support::{cluster_request, test_templates};
use crate::helpers::{try_spawn_app, TestApp};

/// Generous: every node is a real Terraform run, sharing the machine with other tests.
const WITHIN: Duration = Duration::from_secs(240);

async fn app(local_boot: dispatcher::LocalBoot, clusters: Option<&std::path::Path>) -> TestApp {
    try_spawn_app(daemon::Roles::ALL, |config| {
        config.local_boot = local_boot;
        config.clusters_dir = clusters.map(|p| p.to_owned());
    })
    .await
    .expect("the application starts")
}

fn simulate() -> dispatcher::LocalBoot {
    dispatcher::LocalBoot::Simulate {
        delay: Duration::from_millis(200),
    }
}

/// The VM's `Requested` event's data.
async fn requested(app: &TestApp, vm: &str) -> (Value, i64) {
    let row: (String, i64) = store::sqlx::query_as(
        "SELECT (payload::jsonb->'data')::text, position FROM events
         WHERE aggregate_type = 'Provisioning' AND aggregate_id = $1 AND sequence = 1",
    )
    .bind(vm)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    (serde_json::from_str(&row.0).unwrap(), row.1)
}

/// The position of the first event of `kind` of VM `vm`.
async fn position_of(app: &TestApp, vm: &str, kind: &str) -> i64 {
    store::sqlx::query_scalar(
        "SELECT min(position) FROM events
         WHERE aggregate_type = 'Provisioning' AND aggregate_id = $1 AND event_type = $2",
    )
    .bind(vm)
    .bind(kind)
    .fetch_one(&app.pool)
    .await
    .unwrap()
}

fn nodes_of<'a>(cluster: &'a Value, role: &str) -> Vec<&'a Value> {
    cluster["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["role"] == role)
        .collect()
}

#[tokio::test]
async fn a_k3s_ha_cluster_makes_its_servers_first_and_its_agents_after_the_gate_with_the_seeds_url()
{
    let app = app(simulate(), None).await;
    let asked = cluster_request(json!({"roles": {"agent": {"count": 2}}}));
    let cluster: Value = app.post_json("/api/v1/clusters", &asked, 202).await;
    let id = cluster["id"].as_str().unwrap().to_owned();
    assert_eq!(cluster["template"], "k3s-ha");
    assert_eq!(cluster["status"], "requested");
    let ready = app.wait_for_cluster(&id, "ready", WITHIN).await;

    // Three servers (the seed and two joining it), then two agents, all running.
    let roles: Vec<(&str, u64)> = ready["roles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["name"].as_str().unwrap(), r["count"].as_u64().unwrap()))
        .collect();
    assert_eq!(roles, [("seed", 1), ("server", 2), ("agent", 2)]);
    assert_eq!(ready["nodes"].as_array().unwrap().len(), 5, "{ready:#}");
    for node in ready["nodes"].as_array().unwrap() {
        let vm = app.vm(node["vm_id"].as_str().unwrap()).await;
        assert_eq!(vm.status, "running", "{node}");
        let expected = format!("lab-{}-{}", node["role"].as_str().unwrap(), node["index"]);
        assert_eq!(vm.name, expected);
    }

    // The cluster's events: each stage asked for only once the gate before it passed.
    let kinds: Vec<String> = app
        .cluster_events(&id)
        .await
        .into_iter()
        .map(|(kind, data, _)| match kind.as_str() {
            "NodeRequested" | "GatePassed" => {
                format!(
                    "{kind} {}",
                    data["role"]
                        .as_str()
                        .or(data["gate"]["role"].as_str())
                        .unwrap()
                )
            }
            _ => kind,
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "ClusterRequested",
            "NodeRequested seed",
            "GatePassed seed",
            "NodeRequested server",
            "NodeRequested server",
            "GatePassed server",
            "NodeRequested agent",
            "NodeRequested agent",
            "GatePassed agent",
            "ClusterReady",
        ]
    );

    // The seed's URL, as it reported it, is what every other node was asked to join; no
    // VM of a later stage was requested before the gate's taskserv was installed.
    let seed = nodes_of(&ready, "seed")[0]["vm_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let url = ready["outputs"]["seed[0].server_url"]
        .as_str()
        .expect("the seed reported its URL")
        .to_owned();
    assert!(url.starts_with("https://"), "{url}");
    let seed_installed = position_of(&app, &seed, "TaskservInstalled").await;
    for role in ["server", "agent"] {
        for node in nodes_of(&ready, role) {
            let (data, at) = requested(&app, node["vm_id"].as_str().unwrap()).await;
            assert!(
                at > seed_installed,
                "{role} requested before the seed was up"
            );
            let k3s = &data["spec"]["taskservs"][0];
            assert_eq!(k3s["name"], "k3s");
            assert_eq!(k3s["params"]["server_url"], url.as_str());
            assert_eq!(
                k3s["params"]["role"],
                if role == "agent" { "agent" } else { "server" }
            );
            assert_eq!(data["spec"]["cluster"]["id"], id.as_str());
        }
    }
    let (seed_request, _) = requested(&app, &seed).await;
    assert_eq!(
        seed_request["spec"]["taskservs"][0]["params"]["cluster_init"],
        true
    );

    // The cluster's stream replays its events from the first, as the store has them, and
    // resumes after the sequence a client last got.
    let stream = |since: &str| {
        app.get(&format!("/api/v1/clusters/{id}/stream?since={since}"))
            .send()
    };
    let all =
        crate::sse::read_until(stream("").await.unwrap(), |e| e.event == "ClusterReady").await;
    let streamed: Vec<&str> = all.iter().map(|e| e.event.as_str()).collect();
    assert_eq!(streamed.len(), kinds.len());
    assert_eq!(streamed[0], "ClusterRequested");
    let rest =
        crate::sse::read_until(stream("6").await.unwrap(), |e| e.event == "ClusterReady").await;
    assert_eq!(rest[0].number(), 7);
    assert_eq!(rest.len(), kinds.len() - 6);

    // The same events as one JSON page, paged by sequence; another user's cluster is 404.
    let events = format!("/api/v1/clusters/{id}/events");
    let page: Vec<Value> = app.get_json(&events).await;
    let types: Vec<&str> = page.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types, streamed);
    let next: Vec<Value> = app.get_json(&format!("{events}?after=6&limit=2")).await;
    let sequences: Vec<u64> = next
        .iter()
        .map(|e| e["sequence"].as_u64().unwrap())
        .collect();
    assert_eq!(sequences, [7, 8]);
    assert_eq!(next[0]["type"], page[6]["type"]);
    let bob = app.user("bob@example.test", Role::User).await;
    let refused: Value = bob.json("GET", &events, None, 404).await;
    assert_eq!(refused["code"], "not_found", "{refused}");
}

#[tokio::test]
async fn a_ready_cluster_scales_up_and_down_and_is_destroyed_with_every_node() {
    let templates = test_templates(600, 1);
    let app = app(simulate(), Some(templates.path())).await;
    let asked = cluster_request(json!({"template": "pair", "name": "duo"}));
    let cluster: Value = app.post_json("/api/v1/clusters", &asked, 202).await;
    let id = cluster["id"].as_str().unwrap().to_owned();
    let ready = app.wait_for_cluster(&id, "ready", WITHIN).await;
    assert_eq!(nodes_of(&ready, "worker").len(), 1);

    let scale = |count: u32| json!({"role": "worker", "count": count});
    let _: Value = app
        .post_json(&format!("/api/v1/clusters/{id}/scale"), &scale(3), 202)
        .await;
    // The scale ends with its own event, once both added workers passed their gate.
    let to = |count: u32| move |d: &Value| d["role"] == "worker" && d["count"] == count;
    let upto = app
        .wait_for_cluster_event(&id, "ScaleCompleted", WITHIN, to(3))
        .await;
    let since: Vec<&str> = upto
        .iter()
        .skip_while(|(kind, _, _)| kind != "ScaleRequested")
        .map(|(kind, _, _)| kind.as_str())
        .collect();
    assert_eq!(
        since,
        [
            "ScaleRequested",
            "NodeRequested",
            "NodeRequested",
            "ScaleCompleted"
        ]
    );
    let grown = app
        .wait_for_cluster_that(&id, "had three running workers", WITHIN, |c| {
            let workers = nodes_of(c, "worker");
            workers.len() == 3 && workers.iter().all(|n| n["status"] == "running")
        })
        .await;
    assert_eq!(grown["status"], "ready");
    let third = nodes_of(&grown, "worker")[2]["vm_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let second = nodes_of(&grown, "worker")[1]["vm_id"]
        .as_str()
        .unwrap()
        .to_owned();

    // Down to one: the last two workers are destroyed.
    let _: Value = app
        .post_json(&format!("/api/v1/clusters/{id}/scale"), &scale(1), 202)
        .await;
    app.wait_for_status_within(&third, "destroyed", WITHIN)
        .await;
    app.wait_for_status_within(&second, "destroyed", WITHIN)
        .await;
    let shrunk = app
        .wait_for_cluster_that(&id, "had one worker", WITHIN, |c| {
            nodes_of(c, "worker").len() == 1
        })
        .await;
    assert_eq!(shrunk["status"], "ready");
    // Down ends once both dropped workers are destroyed and removed.
    let upto = app
        .wait_for_cluster_event(&id, "ScaleCompleted", WITHIN, to(1))
        .await;
    let since: Vec<&str> = upto
        .iter()
        .skip_while(|(kind, data, _)| !(kind == "ScaleRequested" && data["count"] == 1))
        .map(|(kind, _, _)| kind.as_str())
        .collect();
    assert_eq!(
        since,
        [
            "ScaleRequested",
            "NodeRemoved",
            "NodeRemoved",
            "ScaleCompleted"
        ]
    );

    // Out of range, or a role it does not have: refused, nothing recorded.
    let before = app.cluster_events(&id).await.len();
    let refused = app
        .post(&format!("/api/v1/clusters/{id}/scale"))
        .json(&scale(4))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 422);
    assert!(refused
        .text()
        .await
        .unwrap()
        .contains("outside role worker's range 1 to 3"));
    let refused = app
        .post(&format!("/api/v1/clusters/{id}/scale"))
        .json(&json!({"role": "server", "count": 2}))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 422);
    assert_eq!(app.cluster_events(&id).await.len(), before);

    // Destroyed whole: every node's VM, then the cluster.
    let _: Value = app
        .delete_json(&format!("/api/v1/clusters/{id}"), 202)
        .await;
    let gone = app.wait_for_cluster(&id, "destroyed", WITHIN).await;
    // Its last nodes stay listed, each with its VM destroyed.
    let last = gone["nodes"].as_array().unwrap();
    assert_eq!(last.len(), 2, "{gone:#}");
    assert!(last.iter().all(|n| n["status"] == "destroyed"), "{gone:#}");
    for node in ready["nodes"].as_array().unwrap() {
        let vm = app.vm(node["vm_id"].as_str().unwrap()).await;
        assert_eq!(vm.status, "destroyed");
    }
}

#[tokio::test]
async fn a_gate_that_times_out_rolls_the_cluster_back_and_it_fails_with_the_reason() {
    // Nothing boots: the server's k3s is never installed, and its gate has 3 s.
    let templates = test_templates(3, 1);
    let app = app(dispatcher::LocalBoot::Off, Some(templates.path())).await;
    let asked = cluster_request(json!({"template": "stuck", "name": "stuck"}));
    let cluster: Value = app.post_json("/api/v1/clusters", &asked, 202).await;
    let id = cluster["id"].as_str().unwrap().to_owned();
    let failed = app.wait_for_cluster(&id, "failed", WITHIN).await;
    let why = failed["failure"].as_str().unwrap();
    assert!(why.contains("k3s") && why.contains("server"), "{why}");
    let gate = &failed["gates"][0];
    assert_eq!(gate["state"], "failed");

    // The server's VM was made, then destroyed by the rollback; no worker was asked for.
    let kinds: Vec<String> = app
        .cluster_events(&id)
        .await
        .into_iter()
        .map(|(kind, _, _)| kind)
        .collect();
    assert_eq!(
        kinds,
        [
            "ClusterRequested",
            "NodeRequested",
            "GateFailed",
            "RollbackStarted",
            "ClusterFailed"
        ]
    );
    let server: String = store::sqlx::query_scalar(
        "SELECT payload::jsonb->'data'->>'vm' FROM events
         WHERE aggregate_id = $1 AND event_type = 'NodeRequested'",
    )
    .bind(&id)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    app.wait_for_status_within(&server, "destroyed", WITHIN)
        .await;
    let vms: Value = app.get_json("/api/v1/vms").await;
    let ids: Vec<&str> = vms["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|vm| vm["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [server.as_str()]);
}
