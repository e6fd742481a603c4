//! How a command becomes events, apart from cqrs-es's `handle`: the store's command path
//! calls `decide`, applies each event it returns once, and stores them.

use cqrs_es::Aggregate;

/// The pure half of an aggregate's command handling.
pub trait Decide: Aggregate {
    /// The events `command` records on this state, in order; none when it changes nothing.
    fn decide(
        &self,
        command: Self::Command,
        services: &Self::Services,
    ) -> Result<Vec<Self::Event>, Self::Error>;
}
