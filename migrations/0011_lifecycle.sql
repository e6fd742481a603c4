-- The VM's life around its jobs. `expires_at` (when the expiry sweep destroys the VM) and
-- `boot_since` (when its last create succeeded: the boot timeout counts from here) are
-- columns of the read model so the sweep finds its VMs by index; both are folded from the
-- events like the rest of the row (`provisioningd rebuild-projections` fills them for VMs
-- of earlier versions).
ALTER TABLE vm_views
    ADD COLUMN expires_at timestamptz,
    ADD COLUMN boot_since timestamptz;

CREATE INDEX vm_views_expires ON vm_views (expires_at)
    WHERE status NOT IN ('destroy_requested', 'destroying', 'destroyed');
CREATE INDEX vm_views_booting ON vm_views (boot_since)
    WHERE status IN ('provisioned', 'initializing');

-- The key callback tokens are signed with, when PROVISIONING_CALLBACK_SECRET does not set
-- one: made by the first daemon that starts, shared by all. Never shown or logged.
CREATE TABLE callback_keys
(
    id         smallint PRIMARY KEY CHECK (id = 1),
    key        bytea       NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
