-- The event store, exactly as postgres-es 0.5 expects it, plus a global commit order.
CREATE TABLE events
(
    aggregate_type text                         NOT NULL,
    aggregate_id   text                         NOT NULL,
    sequence       bigint CHECK (sequence >= 0) NOT NULL,
    event_type     text                         NOT NULL,
    event_version  text                         NOT NULL,
    payload        json                         NOT NULL,
    metadata       json                         NOT NULL,
    -- Added by us; postgres-es never names these columns, so their defaults fill them.
    -- Readers follow (txid, position): every row whose txid is below the oldest running
    -- transaction (pg_snapshot_xmin) is final, so reading in that order up to that horizon
    -- never skips a row that a slower concurrent transaction commits later.
    position       bigserial                    NOT NULL,
    txid           xid8                         NOT NULL DEFAULT pg_current_xact_id(),
    recorded_at    timestamptz                  NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (aggregate_type, aggregate_id, sequence)
);

CREATE UNIQUE INDEX events_commit_order ON events (txid, position);

CREATE TABLE snapshots
(
    aggregate_type   text                                 NOT NULL,
    aggregate_id     text                                 NOT NULL,
    last_sequence    bigint CHECK (last_sequence >= 0)    NOT NULL,
    current_snapshot bigint CHECK (current_snapshot >= 0) NOT NULL,
    payload          json                                 NOT NULL,
    PRIMARY KEY (aggregate_type, aggregate_id, last_sequence)
);

-- Wakes followers of the events table (relay, projector) as soon as a writer commits;
-- they also poll, so a lost notification only delays them.
CREATE FUNCTION notify_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('events', '');
    RETURN NULL;
END $$;

CREATE TRIGGER events_notify AFTER INSERT ON events
    FOR EACH STATEMENT EXECUTE FUNCTION notify_events();

-- How far each follower of the events table got, in (txid, position) order.
CREATE TABLE event_checkpoints
(
    name       text        PRIMARY KEY,
    txid       xid8        NOT NULL DEFAULT '0',
    position   bigint      NOT NULL DEFAULT 0,
    updated_at timestamptz NOT NULL DEFAULT now()
);
