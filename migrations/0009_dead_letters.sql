-- Events a follower of the events table (relay, projector) could not handle: undecodable,
-- or too large to publish. The follower parks the event here and moves its checkpoint on,
-- so one bad event never stops the others; an admin lists them and asks for a replay once
-- the cause is fixed, and the follower tries the event again on its next pass.
CREATE TABLE dead_letters
(
    id                  bigserial   PRIMARY KEY,
    follower            text        NOT NULL,
    txid                xid8        NOT NULL,
    position            bigint      NOT NULL,
    aggregate_type      text        NOT NULL,
    aggregate_id        text        NOT NULL,
    sequence            bigint      NOT NULL,
    error               text        NOT NULL,
    attempts            integer     NOT NULL DEFAULT 1,
    parked_at           timestamptz NOT NULL DEFAULT now(),
    replay_requested_at timestamptz,
    resolved_at         timestamptz,
    UNIQUE (follower, aggregate_type, aggregate_id, sequence)
);

CREATE INDEX dead_letters_open ON dead_letters (follower) WHERE resolved_at IS NULL;
