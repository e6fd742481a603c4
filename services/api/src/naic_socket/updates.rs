//! The pushes: every VM event that commits, on any daemon, comes through the process's
//! stream hub in commit order; the VM's status and address after it are folded from its
//! events (not read from the read model, which may not show that event yet), and when
//! either changed, `PROVISIONING_UPDATE` goes to the sockets of the VM's owner.

use std::collections::HashMap;
use std::sync::Arc;

use domain::identity::UserId;
use domain::provisioning::{Lifecycle, ProvisioningEvent, VmId};
use serde::Serialize;
use socketioxide::SocketIo;
use store::feed::FeedEvent;
use tokio::sync::{watch, Mutex, Notify};

use crate::naic::status::naic_status;
use crate::streams::rights::RECHECK;
use crate::streams::Follower;
use crate::AppState;

/// VMs whose state is kept between their events; past it the cache starts again (a VM not
/// kept is folded from its events once more).
const KEPT_VMS: usize = 10_000;

/// What the frontend merges into its list.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Update {
    pub vm_id: String,
    pub status: &'static str,
    pub ipv4_address: Option<String>,
}

/// Whether the pushes follow the commit order: only while some socket is admitted, so that
/// a daemon without sockets reads nothing for them (the stream hub's follower stops when no
/// one listens).
pub struct Following {
    /// `true` while following; admission waits for it.
    on: watch::Sender<bool>,
    /// Wakes the pushes when a socket is admitted while they are idle.
    wake: Notify,
    /// Held while deciding to stop, and while an admission reads `on`: a socket admitted
    /// as the pushes find no socket either sees them stopped (and wakes them) or is seen.
    deciding: Mutex<()>,
}

impl Following {
    pub fn new() -> Arc<Self> {
        Arc::new(Self {
            on: watch::Sender::new(false),
            wake: Notify::new(),
            deciding: Mutex::new(()),
        })
    }

    /// Returns once the pushes follow the commit order: called by admission after the
    /// socket joined its room, before the client hears it is connected, so that nothing
    /// committed after its `connect` is missed.
    pub async fn ensure(&self) {
        {
            let _deciding = self.deciding.lock().await;
            if *self.on.borrow() {
                return;
            }
            self.wake.notify_one();
        }
        let mut on = self.on.subscribe();
        let _ = on.wait_for(|on| *on).await;
    }
}

/// Pushes each VM change to its owner's sockets until the process stops, following the
/// commit order while sockets are admitted.
pub async fn push(state: AppState, io: SocketIo, following: Arc<Following>) {
    loop {
        tokio::select! {
            _ = following.wake.notified() => {}
            _ = state.stopping.cancelled() => return,
        }
        let mut follower = match start(&state).await {
            Ok(follower) => follower,
            Err(error) => {
                tracing::warn!(%error, "the Socket.IO updates cannot follow the events; retrying");
                tokio::time::sleep(RECHECK).await;
                following.wake.notify_one();
                continue;
            }
        };
        following.on.send_replace(true);
        follow(&state, &io, &following, &mut follower).await;
        if state.stopping.is_cancelled() {
            return;
        }
    }
}

/// A follower from the place the store is at now: everything committed after this returns
/// is pushed, even if the hub's follower only starts with it (it starts from where the
/// store is when it first reads, which may be later).
async fn start(state: &AppState) -> Result<Follower, store::sqlx::Error> {
    let now = store::feed::head(&state.pool).await?;
    Follower::new(&state.hub, Some(now)).await
}

/// Pushes what commits until no socket is left (or the process stops).
async fn follow(state: &AppState, io: &SocketIo, following: &Following, follower: &mut Follower) {
    let mut vms = Tracked::default();
    let mut ticks = tokio::time::interval(RECHECK);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let events = tokio::select! {
            next = follower.next() => next,
            _ = ticks.tick() => {
                let _deciding = following.deciding.lock().await;
                if no_sockets(io).await {
                    following.on.send_replace(false);
                    return;
                }
                continue;
            }
            _ = state.stopping.cancelled() => return,
        };
        let events = match events {
            Some(Ok(events)) => events,
            Some(Err(error)) => {
                tracing::warn!(%error, "the Socket.IO updates could not read the events");
                continue;
            }
            None => return,
        };
        for event in &events {
            match vms.fold(state, event).await {
                Ok(Some((owner, update))) => emit(io, owner, &update).await,
                Ok(None) => {}
                Err(error) => {
                    tracing::warn!(%error, vm = %event.aggregate_id, "a VM change is not pushed")
                }
            }
        }
    }
}

/// Whether no admitted socket is left: each is in its user's room until it disconnects.
async fn no_sockets(io: &SocketIo) -> bool {
    match io.of(super::NAMESPACE) {
        Some(ns) => ns.rooms().await.map(|r| r.is_empty()).unwrap_or(false),
        None => true,
    }
}

async fn emit(io: &SocketIo, owner: UserId, update: &Update) {
    let Some(ns) = io.of(super::NAMESPACE) else {
        return;
    };
    if let Err(error) = ns.to(super::room(owner)).emit(super::EVENT, update).await {
        tracing::warn!(%error, "could not push a VM change");
    }
}

/// A VM's owner and state, after its event `sequence`.
struct Vm {
    owner: UserId,
    lifecycle: Lifecycle,
    sequence: u64,
}

#[derive(Default)]
struct Tracked(HashMap<VmId, Vm>);

impl Tracked {
    /// Folds `event` into its VM's state; the update to push when the VM's status or address
    /// changed with it, and to whom.
    async fn fold(
        &mut self,
        state: &AppState,
        event: &FeedEvent,
    ) -> Result<Option<(UserId, Update)>, Box<dyn std::error::Error + Send + Sync>> {
        let Some((id, change)) = event.provisioning()? else {
            return Ok(None);
        };
        if matches!(change, ProvisioningEvent::LogLine { .. }) {
            // A line changes neither the status nor the address.
            if let Some(vm) = self.0.get_mut(&id) {
                vm.sequence = vm.sequence.max(event.sequence);
            }
            return Ok(None);
        }
        let known = self
            .0
            .get(&id)
            .is_some_and(|vm| vm.sequence + 1 >= event.sequence);
        if !known {
            let vm = load(state, id, event.sequence.saturating_sub(1)).await?;
            if self.0.len() >= KEPT_VMS {
                self.0.clear();
            }
            self.0.insert(id, vm);
        }
        let owner_of = |change: &ProvisioningEvent| match change {
            ProvisioningEvent::Requested { spec, .. } => Some(spec.owner),
            _ => None,
        };
        let vm = self.0.get_mut(&id).expect("inserted above");
        if vm.sequence >= event.sequence {
            return Ok(None);
        }
        if let Some(owner) = owner_of(&change) {
            vm.owner = owner;
        }
        let before = (vm.lifecycle.status, vm.lifecycle.ip.clone());
        vm.lifecycle.apply(&change);
        vm.sequence = event.sequence;
        if before == (vm.lifecycle.status, vm.lifecycle.ip.clone()) {
            return Ok(None);
        }
        Ok(Some((vm.owner, update_of(id, &vm.lifecycle))))
    }
}

/// A VM's state after its event `upto`, folded from its events without their lines.
async fn load(state: &AppState, id: VmId, upto: u64) -> Result<Vm, store::sqlx::Error> {
    let mut vm = Vm {
        // Replaced by the owner the `Requested` event names, which is always the first.
        owner: UserId::BUILTIN_ADMIN,
        lifecycle: Lifecycle::default(),
        sequence: upto,
    };
    for change in store::status_history(&state.pool, id, upto).await? {
        if let ProvisioningEvent::Requested { spec, .. } = &change {
            vm.owner = spec.owner;
        }
        vm.lifecycle.apply(&change);
    }
    Ok(vm)
}

fn update_of(id: VmId, lifecycle: &Lifecycle) -> Update {
    Update {
        vm_id: id.to_string(),
        status: naic_status(lifecycle.status),
        ipv4_address: lifecycle.ip.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_update_has_the_names_the_frontend_reads() {
        let update = Update {
            vm_id: "v".into(),
            status: "RUNNING",
            ipv4_address: None,
        };
        assert_eq!(
            serde_json::to_value(&update).unwrap(),
            serde_json::json!({"vmId": "v", "status": "RUNNING", "ipv4Address": null})
        );
    }
}
