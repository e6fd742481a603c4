-- The drift check: when it last queued a refresh of each VM, so that it takes the running
-- VMs in turn, the longest unchecked first. Not a read model (nothing in the events says
-- it): losing the rows only makes every VM due again.
CREATE TABLE drift_checks
(
    vm_id      uuid PRIMARY KEY,
    checked_at timestamptz NOT NULL
);
