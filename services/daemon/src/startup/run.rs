//! Runs the roles an application was built with until its token is cancelled; a role that
//! ends early stops the others. (A part of the start, apart for size.)

use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::serve::ListenerExt;
use dispatcher::Dispatcher;
use ingester::Ingester;
use tokio::task::{JoinError, JoinSet};
use tokio_util::sync::CancellationToken;

use super::*;

impl Application {
    /// Runs every configured role until the shutdown token is cancelled. A role that ends
    /// before (a bug, a panic) stops the others, and the error names it.
    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        let mut roles = RoleSet::default();
        let cancel = self.cancel;
        let state = self.state;
        if self.roles.relay {
            let (pool, bus) = (state.app.pool.clone(), state.app.bus.clone());
            roles.spawn("relay", relay::run(pool, bus, cancel.clone()));
        }
        if self.roles.projector {
            roles.spawn(
                "projector",
                projector::run(state.app.pool.clone(), cancel.clone()),
            );
        }
        if self.roles.dispatcher {
            let dispatcher = Dispatcher {
                config: self.dispatcher,
                pool: state.app.pool.clone(),
                bus: state.app.bus.clone(),
                executor: self.executor.clone(),
                max_runners: self.max_runners,
                name: dispatcher_name(),
                keys: self.runner_keys.clone(),
            };
            roles.spawn("dispatcher", dispatcher.run(cancel.clone()));
            if let Some(kubernetes) = &self.kubernetes {
                // Reports the jobs whose runner's Job or pod ended in a way it could not
                // report; its reconciler, those whose Job vanished.
                let watcher = kubernetes.watcher(
                    Arc::new(dispatcher::BusFailures(
                        state.app.bus.clone(),
                        self.runner_keys.clone(),
                    )),
                    Arc::new(dispatcher::StoreRunningJobs(state.app.pool.clone())),
                );
                roles.spawn("kubernetes-watcher", watcher.run(cancel.clone()));
            }
            let (pool, bus) = (state.app.pool.clone(), state.app.bus.clone());
            roles.spawn(
                "job-status",
                dispatcher::answer_job_status(pool, bus, cancel.clone()),
            );
        }
        if self.roles.ingester {
            let ingester = Ingester::new(
                state.app.bus.clone(),
                state.app.pool.clone(),
                self.runner_keys.clone(),
            );
            roles.spawn("ingester", ingester.run(cancel.clone()));
            let watchdog = ingester::Watchdog {
                pool: state.app.pool.clone(),
                silence: self.job_silence,
                executor: self.executor.clone(),
                limits: state.app.job_limits,
            };
            roles.spawn("watchdog", watchdog.run(cancel.clone()));
            let (every, warnings, boot_timeout) = self.sweep;
            let sweep = ingester::Sweep {
                pool: state.app.pool.clone(),
                every,
                warnings,
                boot_timeout,
            };
            roles.spawn("lifecycle-sweep", sweep.run(cancel.clone()));
            let gauges = ingester::Gauges {
                pool: state.app.pool.clone(),
                bus: state.app.bus.clone(),
            };
            roles.spawn("gauges", gauges.run(cancel.clone()));
            if let Some(config) = self.drift_check {
                let check = ingester::DriftCheck {
                    pool: state.app.pool.clone(),
                    config,
                };
                roles.spawn("drift-check", check.run(cancel.clone()));
            }
        }
        if self.roles.api {
            // Makes clusters' nodes through the same use cases as the API; once in the
            // deployment (a lease), so any daemon serving the API may run it.
            roles.spawn(
                "cluster-coordinator",
                app::clusters::coordinator::run(state.app.clone(), CLUSTER_SWEEP, cancel.clone()),
            );
            let policies = state.app.policies.clone();
            roles.spawn("policy-reload", reload_on_sighup(policies, cancel.clone()));
        }
        if let Some(listener) = self.listener {
            // `GET /metrics` serves the platform gauges whichever replica computed them.
            let following = ingester::gauges::follow(state.app.bus.clone(), cancel.clone());
            roles.spawn("gauges-follower", following);
            let stop = cancel.clone();
            roles.spawn("api", async move {
                // With each connection's peer address: `me` in `allow_ssh_from` needs it.
                let app = if self.roles.api {
                    api::app(state)
                } else {
                    api::metrics_app()
                };
                let app = app.into_make_service_with_connect_info::<SocketAddr>();
                // Without Nagle's delay: an SSE event or an answer written in two parts
                // would otherwise wait for the client's delayed ACK (40 ms on Linux).
                let listener = listener.tap_io(|tcp| {
                    if let Err(error) = tcp.set_nodelay(true) {
                        tracing::debug!(%error, "could not set TCP_NODELAY on a connection");
                    }
                });
                let deadline = stop.clone();
                let served = axum::serve(listener, app)
                    .with_graceful_shutdown(async move { stop.cancelled().await });
                // Streams and exports end at shutdown, but only when the server asks them
                // for more: one whose client stopped reading waits on the socket. After
                // the grace, the server stops waiting and such connections are dropped
                // with the runtime.
                tokio::select! {
                    served = served => if let Err(e) = served {
                        tracing::error!(error = %e, "the API server failed");
                    },
                    _ = async {
                        deadline.cancelled().await;
                        tokio::time::sleep(SHUTDOWN_GRACE).await;
                    } => tracing::warn!(
                        grace = ?SHUTDOWN_GRACE,
                        "answers still in progress after the shutdown grace are cut"
                    ),
                }
            });
        }
        // A role that ends before shutdown stops the process, so that a supervisor restarts
        // it rather than it running on without that role.
        let result = tokio::select! {
            // Roles end when cancelled too: a shutdown seen at the same time is no failure.
            biased;
            _ = cancel.cancelled() => Ok(()),
            Some((role, ended)) = roles.join_next() => {
                cancel.cancel();
                let error = match ended {
                    Err(e) if e.is_panic() => format!("the {role} role panicked"),
                    _ => format!("the {role} role ended before shutdown"),
                };
                tracing::error!(role, "{error}; stopping the other roles");
                Err(std::io::Error::other(error))
            }
        };
        roles.stop(ROLES_GRACE).await;
        result
    }
}

/// Reloads the policies at each SIGHUP until cancelled; a bad reload keeps the old ones.
async fn reload_on_sighup(policies: Arc<api::policy::Policies>, cancel: CancellationToken) {
    use tokio::signal::unix::{signal, SignalKind};
    let mut hangups = match signal(SignalKind::hangup()) {
        Ok(hangups) => hangups,
        Err(e) => {
            tracing::error!(error = %e, "no SIGHUP handler: policies reload only through the API");
            return cancel.cancelled().await;
        }
    };
    loop {
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = hangups.recv() => match policies.reload() {
                Ok(count) => tracing::info!(policies = count, "policies reloaded on SIGHUP"),
                Err(e) => tracing::error!(error = %e, "policies not reloaded on SIGHUP; the old ones stay"),
            },
        }
    }
}
/// How long the roles get to end after a shutdown before those left are aborted, as a
/// SIGKILL would end them (every role is safe to kill at any point: what it had not
/// acknowledged is done again by the next process). A statement that never comes back
/// must not hold a stop forever.
const ROLES_GRACE: std::time::Duration = std::time::Duration::from_secs(15);

/// The running roles, by name.
#[derive(Default)]
struct RoleSet {
    tasks: JoinSet<()>,
    names: HashMap<tokio::task::Id, &'static str>,
}

impl RoleSet {
    fn spawn(&mut self, name: &'static str, role: impl Future<Output = ()> + Send + 'static) {
        let id = self.tasks.spawn(role).id();
        self.names.insert(id, name);
    }

    /// The next role to end, with how it ended; `None` when none runs.
    async fn join_next(&mut self) -> Option<(&'static str, Result<(), JoinError>)> {
        let (id, ended) = match self.tasks.join_next_with_id().await? {
            Ok((id, ())) => (id, Ok(())),
            Err(e) => (e.id(), Err(e)),
        };
        Some((self.names.remove(&id).unwrap_or("unnamed"), ended))
    }

    /// Waits for every role to end, up to `grace`; then aborts those left, naming them.
    async fn stop(&mut self, grace: std::time::Duration) {
        let ended =
            tokio::time::timeout(grace, async { while self.join_next().await.is_some() {} }).await;
        if ended.is_err() {
            let mut left: Vec<&str> = self.names.values().copied().collect();
            left.sort_unstable();
            tracing::warn!(
                roles = ?left,
                ?grace,
                "roles still running after the shutdown grace are aborted"
            );
            self.tasks.abort_all();
            while self.join_next().await.is_some() {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::RoleSet;

    #[tokio::test]
    async fn a_role_that_ends_is_known_by_its_name() {
        let mut roles = RoleSet::default();
        roles.spawn("waiting", std::future::pending());
        roles.spawn("broken", async { panic!("a bug") });
        let (name, ended) = roles.join_next().await.unwrap();
        assert_eq!(name, "broken");
        assert!(ended.unwrap_err().is_panic());

        roles.spawn("done", async {});
        let (name, ended) = roles.join_next().await.unwrap();
        assert_eq!(name, "done");
        assert!(ended.is_ok());
    }

    #[tokio::test]
    async fn a_stop_aborts_the_roles_that_do_not_end_within_the_grace() {
        let mut roles = RoleSet::default();
        roles.spawn("stuck", std::future::pending());
        roles.spawn("quick", async {});
        let grace = std::time::Duration::from_millis(50);
        tokio::time::timeout(std::time::Duration::from_secs(5), roles.stop(grace))
            .await
            .expect("the stop ends soon after its grace");
        assert!(roles.join_next().await.is_none(), "no role is left");
        assert!(roles.names.is_empty());
    }
}
