-- The audit history (`GET /api/v1/audit` and its export) reads the events table in commit
-- order, `(txid, position)`, with filters: each filter has an index in that order, so a page
-- reads only its own rows however many events the table holds.

-- Where a page starts, the event at a position, is found by `events_position` (0008).

CREATE INDEX events_type_order ON events (event_type, txid, position);
CREATE INDEX events_actor_order ON events ((metadata->>'actor'), txid, position);
CREATE INDEX events_aggregate_order ON events (aggregate_id, txid, position);
CREATE INDEX events_recorded ON events (recorded_at);
-- Log lines are most of the table: `exclude_logs=true` skips them by index.
CREATE INDEX events_no_logs_order ON events (txid, position) WHERE event_type <> 'LogLine';
-- The provider of a VM is in its request only.
CREATE INDEX events_requested_provider ON events ((payload->'data'->'spec'->>'provider'))
    INCLUDE (aggregate_id) WHERE event_type = 'Requested';
