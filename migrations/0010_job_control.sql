-- Job control: what the watchdog needs to enforce deadlines and to kill the runners of
-- force-cancelled jobs, without reading the read model. `action` and `claimed_at` are
-- written when a dispatcher claims the job (rows from earlier versions have no action and
-- get no deadline); `stop_requested` when a force-cancel ended the job while its runner may
-- still run.
ALTER TABLE job_liveness
    ADD COLUMN action text,
    ADD COLUMN claimed_at timestamptz NOT NULL DEFAULT now(),
    ADD COLUMN stop_requested boolean NOT NULL DEFAULT false;
