//! What an admin runs the platform with: the policies reloaded, a parked event tried again;
//! and what any caller may ask of their own standing (limits and usage).

use domain::quota::{Limits, Usage};

use crate::{App, Error, Principal};

/// A dead letter, as the store keeps it.
pub type DeadLetter = store::dead_letters::DeadLetter;

impl App {
    /// Reads the Cedar policies again; invalid ones leave the old ones in force and are an
    /// `Invalid` naming `policies` with where they are wrong. The count of policies read.
    #[tracing::instrument(skip_all)]
    pub fn reload_policies(&self) -> Result<usize, Error> {
        match self.policies.reload() {
            Ok(count) => {
                tracing::info!(policies = count, "policies reloaded");
                Ok(count)
            }
            Err(e) => {
                tracing::warn!(error = %e, "policies not reloaded; the old ones stay");
                Err(Error::invalid("policies", e.to_string()))
            }
        }
    }

    /// Asks the follower that parked dead letter `id` to try it again on its next pass;
    /// not found when it is unknown or resolved.
    #[tracing::instrument(skip_all, fields(id))]
    pub async fn replay_dead_letter(&self, id: i64) -> Result<DeadLetter, Error> {
        store::dead_letters::request_replay(&self.pool, id)
            .await?
            .ok_or_else(|| Error::NotFound(format!("no unresolved dead letter {id}")))
    }

    /// The caller's limits under the policies in force, and what they hold now.
    #[tracing::instrument(skip_all)]
    pub async fn limits_and_usage(&self, principal: &Principal) -> Result<(Limits, Usage), Error> {
        let limits = self.policies.book().limits(principal);
        let usage = crate::policy::usage_of(self, principal.user).await?;
        Ok((limits, usage))
    }
}
