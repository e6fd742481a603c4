-- Read models: projections of the events table, rebuilt from it at any time.

CREATE TABLE vm_views
(
    id            uuid PRIMARY KEY,
    name          text        NOT NULL,
    provider      text        NOT NULL,
    template      text        NOT NULL,
    status        text        NOT NULL,
    ip            text,
    last_error    text,
    created_at    timestamptz NOT NULL,
    updated_at    timestamptz NOT NULL,
    last_sequence bigint      NOT NULL,
    -- The whole folded view (domain::provisioning::VmView), to continue folding from.
    state         jsonb       NOT NULL
);

CREATE INDEX vm_views_created ON vm_views (created_at DESC, id);

CREATE TABLE vm_logs
(
    vm_id       uuid        NOT NULL,
    job_id      integer     NOT NULL,
    line        integer     NOT NULL,
    level       text        NOT NULL,
    kind        text        NOT NULL,
    message     text        NOT NULL,
    recorded_at timestamptz NOT NULL,
    PRIMARY KEY (vm_id, job_id, line)
);
