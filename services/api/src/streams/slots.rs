//! How many streams and exports one caller holds open at once: at most [`PER_CALLER`] by
//! default (`PROVISIONING_STREAMS_PER_CALLER`), so
//! that one user cannot hold the database's connections and the server's tasks for
//! everyone (each stream reads the store as it goes). Past it a new one is a 429 until one
//! closes.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use domain::identity::UserId;

use crate::ApiError;

/// Streams and exports one caller may hold open at once, unless the operator says.
pub const PER_CALLER: usize = 16;

/// The open streams and exports of each caller.
#[derive(Debug)]
pub struct Slots {
    held: Mutex<HashMap<UserId, usize>>,
    per_caller: usize,
}

impl Default for Slots {
    fn default() -> Self {
        Self::new(PER_CALLER)
    }
}

/// One open stream or export; its slot is free again when this is dropped (with the
/// response's body, when the client leaves or the stream ends).
#[derive(Debug)]
pub struct Slot {
    slots: Arc<Slots>,
    user: UserId,
}

impl Slots {
    /// Slots for `per_caller` streams and exports per caller.
    pub fn new(per_caller: usize) -> Self {
        Self {
            held: Mutex::default(),
            per_caller,
        }
    }

    /// A slot for one more stream or export of `user`; 429 when they hold all theirs.
    pub fn take(self: &Arc<Self>, user: UserId) -> Result<Slot, ApiError> {
        let mut held = self.held.lock().expect("not poisoned");
        let count = held.entry(user).or_default();
        if *count >= self.per_caller {
            return Err(ApiError::TooMany(format!(
                "at most {} streams and exports may be open at once; close one first",
                self.per_caller
            )));
        }
        *count += 1;
        Ok(Slot {
            slots: self.clone(),
            user,
        })
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut held = self.slots.held.lock().expect("not poisoned");
        if let Some(count) = held.get_mut(&self.user) {
            *count -= 1;
            if *count == 0 {
                held.remove(&self.user);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_caller_holds_at_most_sixteen_slots_and_a_dropped_one_is_free_again() {
        let slots = Arc::new(Slots::default());
        let ada = UserId::new(uuid::Uuid::new_v4());
        let mut held: Vec<Slot> = (0..PER_CALLER).map(|_| slots.take(ada).unwrap()).collect();
        assert!(matches!(slots.take(ada), Err(ApiError::TooMany(_))));
        // Another caller is not counted with her.
        let bob = UserId::new(uuid::Uuid::new_v4());
        assert!(slots.take(bob).is_ok());
        held.pop();
        held.push(slots.take(ada).unwrap());
        assert!(matches!(slots.take(ada), Err(ApiError::TooMany(_))));
    }
}
