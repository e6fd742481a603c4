-- Each caller's last committed write: the position of the last event of their last command.
-- A read by that caller, on any daemon and through any face, waits (bounded) until the read
-- models show it, so a client reads its own writes without carrying positions.
CREATE TABLE caller_positions (
    user_id uuid PRIMARY KEY,
    position bigint NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT now()
);
