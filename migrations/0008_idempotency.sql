-- Answers to requests sent with an `Idempotency-Key` header: written in the same
-- transaction as the command's events, so a retry of a committed request gets the same
-- answer and never runs the command twice. Rows expire (`expires_at`); expired ones are
-- replaced when their key is used again and deleted now and then.
CREATE TABLE idempotency_keys
(
    key         text PRIMARY KEY,
    -- What the request was (method, path and body): the same key with another request is
    -- refused.
    fingerprint text        NOT NULL,
    status      smallint    NOT NULL,
    body        jsonb       NOT NULL,
    position    bigint,
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL
);

CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at);

-- Read-your-writes: a GET with `min_position` looks up that event's place in the commit
-- order, to compare it with the projector's checkpoint.
CREATE INDEX events_position ON events (position);
