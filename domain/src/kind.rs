//! The kinds of aggregate the event store holds, as one typed list.
//!
//! Followers of the commit-order feed (relay, projector, streams, audit) tell events apart by
//! their stored `aggregate_type`. Parsing it once into [`AggregateKind`] and matching on the
//! kind exhaustively means a new aggregate is a compile error in every follower that must
//! decide what to do with its events, rather than a string no follower recognises and
//! silently skips.

use cqrs_es::Aggregate;

use crate::catalog::Catalog;
use crate::cluster::Cluster;
use crate::provisioning::Provisioning;

/// One kind of aggregate in the event store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AggregateKind {
    /// A VM: the `Provisioning` aggregate.
    Vm,
    /// The provider and template catalog: the `Catalog` aggregate (one instance).
    Catalog,
    /// Several VMs made as one from a topology template: the `Cluster` aggregate.
    Cluster,
}

impl AggregateKind {
    /// Every kind, in a fixed order.
    pub const ALL: [AggregateKind; 3] = [
        AggregateKind::Vm,
        AggregateKind::Catalog,
        AggregateKind::Cluster,
    ];

    /// The name the event store records in `aggregate_type`: the cqrs-es `Aggregate::TYPE`.
    pub fn type_name(self) -> &'static str {
        match self {
            AggregateKind::Vm => Provisioning::TYPE,
            AggregateKind::Catalog => Catalog::TYPE,
            AggregateKind::Cluster => Cluster::TYPE,
        }
    }

    /// The token naming the kind in event subjects (`<prefix>.events.<token>. ...`), as
    /// `nats/subjects.md` documents them.
    pub fn subject_token(self) -> &'static str {
        match self {
            AggregateKind::Vm => "vm",
            AggregateKind::Catalog => "catalog",
            AggregateKind::Cluster => "cluster",
        }
    }

    /// The kind whose [`type_name`](Self::type_name) is `type_name`; `None` for a type this
    /// build does not know (written by a newer version, or by hand).
    pub fn parse(type_name: &str) -> Option<AggregateKind> {
        Self::ALL.into_iter().find(|k| k.type_name() == type_name)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn every_kind_parses_back_from_its_type_name() {
        for kind in AggregateKind::ALL {
            assert_eq!(AggregateKind::parse(kind.type_name()), Some(kind));
        }
        assert_eq!(
            AggregateKind::parse("Provisioning"),
            Some(AggregateKind::Vm)
        );
        assert_eq!(
            AggregateKind::parse("Catalog"),
            Some(AggregateKind::Catalog)
        );
        assert_eq!(AggregateKind::parse("provisioning"), None);
        assert_eq!(AggregateKind::parse(""), None);
    }

    #[test]
    fn subject_tokens_and_type_names_are_distinct() {
        let tokens: HashSet<_> = AggregateKind::ALL
            .iter()
            .map(|k| k.subject_token())
            .collect();
        let names: HashSet<_> = AggregateKind::ALL.iter().map(|k| k.type_name()).collect();
        assert_eq!(tokens.len(), AggregateKind::ALL.len());
        assert_eq!(names.len(), AggregateKind::ALL.len());
        for token in tokens {
            assert!(!token.is_empty() && !token.contains(['.', '*', '>', ' ']));
        }
    }
}
