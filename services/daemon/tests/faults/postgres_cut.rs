//! The daemon's Postgres cut off for 10 s through a proxy (connections refused), and again
//! with its connections stalled, while jobs run: commands answer `503` with `Retry-After`
//! within 5 s and write nothing, the consumers back off and resume, the relay skips
//! nothing, and a command refused during the cut goes through when sent again with the
//! same id. Terraform's state backend stays direct: the runs themselves are not cut.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::checks::{check_all, took, Expect};
use crate::daemon::{vm_request, Daemon, Setup};
use crate::database::server_url;
use crate::proxy::{target_of, Mode, Proxy};
use crate::wrapper::Wrapper;

const WAIT: Duration = Duration::from_secs(90);
const CUT: Duration = Duration::from_secs(10);
/// The bound on a command's answer while the database is away.
const ANSWER_WITHIN: Duration = Duration::from_secs(5);

#[tokio::test]
async fn jobs_and_commands_survive_postgres_cut_off_and_stalled() {
    let started = Instant::now();
    let wrapper = Wrapper::new();
    let proxy = Arc::new(Proxy::start(target_of(&server_url("postgres"))).await);
    let through = proxy.clone();
    let daemon = Daemon::start(Setup {
        terraform_bin: wrapper.path.clone(),
        database_url: Box::new(move |url| through.url(url)),
        ..Setup::default()
    })
    .await;

    let mut expected = vec![];
    for mode in [Mode::Refuse, Mode::Stall] {
        let name = format!("{mode:?}").to_lowercase();
        // One VM to destroy during the cut.
        let to_destroy = daemon.create_vm(&format!("{name}-destroy")).await;
        daemon
            .wait_for_status(&to_destroy, "provisioned", WAIT)
            .await;

        // Runs that print over the whole cut: their lines and results wait in JetStream.
        wrapper.set_markers(8);
        wrapper.set_pause(1.0);
        let mut running = vec![];
        for i in 0..2 {
            running.push(daemon.create_vm(&format!("{name}-run-{i}")).await);
        }
        for vm in &running {
            wrapper.wait_invocations(vm, "apply", 1, WAIT).await;
        }
        wrapper.set_markers(3);
        wrapper.set_pause(0.0);

        let before = events_of(&daemon, &to_destroy).await;
        let cut = Instant::now();
        proxy.set(mode);
        let new_id = uuid::Uuid::new_v4().to_string();
        let mut create = vm_request(&format!("{name}-during"));
        create["id"] = new_id.clone().into();
        let mut slowest = Duration::ZERO;
        let mut refused = 0;
        // Commands through the whole cut, one after another.
        while cut.elapsed() + ANSWER_WITHIN < CUT {
            slowest = slowest.max(refused_at_once(&daemon, Some(&create), &to_destroy).await);
            slowest = slowest.max(refused_at_once(&daemon, None, &to_destroy).await);
            refused += 2;
        }
        tokio::time::sleep(CUT.saturating_sub(cut.elapsed())).await;
        assert_eq!(
            events_of(&daemon, &new_id).await,
            0,
            "{mode:?}: a refused create wrote"
        );
        assert_eq!(
            events_of(&daemon, &to_destroy).await,
            before,
            "{mode:?}: a refused destroy wrote"
        );
        proxy.set(Mode::Open);
        let back = Instant::now();

        // The same commands again, with the same id: they go through now.
        let created = accepted_soon(&daemon, Some(&create), &to_destroy).await;
        assert_eq!(created, new_id);
        accepted_soon(&daemon, None, &to_destroy).await;
        let accepted = back.elapsed();

        for vm in running.iter().chain([&new_id]) {
            daemon.wait_for_status(vm, "provisioned", WAIT).await;
        }
        daemon.wait_for_status(&to_destroy, "destroyed", WAIT).await;
        eprintln!(
            "Postgres {mode:?}: cut {:.1} s; {refused} commands answered 503 in at most \
             {:.2} s; the same commands accepted {:.1} s after the cut; every job done \
             {:.1} s after the cut",
            back.duration_since(cut).as_secs_f64(),
            slowest.as_secs_f64(),
            accepted.as_secs_f64(),
            back.elapsed().as_secs_f64()
        );
        expected.push(Expect::destroyed(&to_destroy));
        expected.extend(
            running
                .iter()
                .chain([&new_id])
                .map(|vm| Expect::provisioned(vm)),
        );
    }
    check_all(&daemon, &wrapper, &expected).await;
    took(
        "jobs_and_commands_survive_postgres_cut_off_and_stalled",
        started,
    );
}

/// Sends the create (`Some`) or the destroy of `vm` (`None`); it must answer `503` with
/// `Retry-After` within `ANSWER_WITHIN`. How long it took.
async fn refused_at_once(
    daemon: &Daemon,
    create: Option<&serde_json::Value>,
    vm: &str,
) -> Duration {
    let sent = Instant::now();
    let response = send(daemon, create, vm).await;
    let took = sent.elapsed();
    let status = response.status();
    let retry_after = response.headers().get("retry-after").cloned();
    let body = response.text().await.unwrap_or_default();
    assert_eq!(status, 503, "answered {status} after {took:?}: {body}");
    assert!(retry_after.is_some(), "a 503 without Retry-After: {body}");
    assert!(took < ANSWER_WITHIN, "answered after {took:?}");
    took
}

/// Sends the command until it answers `202` (up to 10 s: the pool opens new connections);
/// the VM's id.
async fn accepted_soon(daemon: &Daemon, create: Option<&serde_json::Value>, vm: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let response = send(daemon, create, vm).await;
        let status = response.status();
        let body = response.text().await.unwrap_or_default();
        if status == 202 {
            let vm: crate::wire::Vm = serde_json::from_str(&body).unwrap();
            return vm.id;
        }
        assert_eq!(status, 503, "{body}");
        assert!(Instant::now() < deadline, "still 503 after the cut: {body}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn send(daemon: &Daemon, create: Option<&serde_json::Value>, vm: &str) -> reqwest::Response {
    let request = match create {
        Some(body) => daemon
            .request(reqwest::Method::POST, "/api/v1/vms")
            .json(body),
        None => daemon.request(reqwest::Method::DELETE, &format!("/api/v1/vms/{vm}")),
    };
    request.send().await.expect("the API answers")
}

/// The events of `id` in Postgres, read straight (not through the proxy).
async fn events_of(daemon: &Daemon, id: &str) -> i64 {
    store::sqlx::query_scalar("SELECT count(*) FROM events WHERE aggregate_id = $1")
        .bind(id)
        .fetch_one(&daemon.pool)
        .await
        .unwrap()
}
