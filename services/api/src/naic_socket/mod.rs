//! Live updates for NAIC's frontend: the Socket.IO namespace `/vm` (at the default path
//! `/socket.io/` of the API's own server), where a signed-in browser gets a
//! `PROVISIONING_UPDATE` `{vmId, status, ipv4Address}` each time one of its VMs changes
//! status or address.
//!
//! Sockets are admitted by the browser's session cookie, as a request is ([`admit`]); each
//! joins its user's room, and the pushes ([`updates`]) go to the room of the VM's owner only.
//! The pushes follow the commit order through the process's stream hub, so a socket gets the
//! changes of every daemon's requests and jobs, whichever daemon it is connected to.

mod admit;
mod updates;

use socketioxide::extract::SocketRef;
use socketioxide::handler::ConnectHandler;
use socketioxide::layer::SocketIoLayer;
use socketioxide::SocketIo;

use crate::AppState;
use domain::identity::UserId;

/// The namespace NAIC's frontend connects to.
pub const NAMESPACE: &str = "/vm";
/// The event a VM's change is pushed as.
pub const EVENT: &str = "PROVISIONING_UPDATE";

/// The Socket.IO layer to put around the API's router, with the tasks that push updates and
/// disconnect sockets whose session ended; they stop with the process (`state.stopping`),
/// closing every socket.
pub fn layer(state: &AppState) -> SocketIoLayer {
    let (layer, io) = SocketIo::builder().build_layer();
    let following = updates::Following::new();
    let admission = {
        let (state, following) = (state.clone(), following.clone());
        move |socket: SocketRef, auth| admit::admit(state, following, socket, auth)
    };
    // Admission does all there is (the room is joined before the client hears `connect`):
    // the connect handler itself has nothing left to do.
    io.ns(NAMESPACE, (async || {}).with(admission));
    tokio::spawn(updates::push(state.clone(), io.clone(), following));
    tokio::spawn(admit::recheck(state.clone(), io.clone()));
    let stopping = state.stopping.clone();
    tokio::spawn(async move {
        stopping.cancelled().await;
        io.close().await;
    });
    layer
}

/// The room of a user's sockets.
fn room(user: UserId) -> String {
    format!("user:{user}")
}
