-- When each claimed or running job last showed a sign of life: written when a dispatcher
-- claims the job, then on every runner message (heartbeats included), removed when the job
-- ends. The watchdog reads this, never the read model. One row per job, not an event per
-- heartbeat.
CREATE TABLE job_liveness (
    vm_id uuid NOT NULL,
    job_id bigint NOT NULL,
    last_seen timestamptz NOT NULL DEFAULT now(),
    -- The executor's name of the runner (`local:<pid>`, `kubernetes:<ns>/<job>`), once known,
    -- so the watchdog can stop it.
    runner text,
    PRIMARY KEY (vm_id, job_id)
);
