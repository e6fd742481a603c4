-- The master secret runner messages are signed with (each job's key is derived from it and
-- the job): made once by whichever daemon asks first, unless PROVISIONING_RUNNER_SIGNING_SECRET
-- sets one. One row.
CREATE TABLE runner_signing_keys
(
    id         smallint PRIMARY KEY CHECK (id = 1),
    key        bytea       NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
