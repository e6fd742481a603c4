-- Taskservs an admin enabled or disabled per provider (the Catalog aggregate's
-- `TaskservEnabledChanged`). No row: enabled wherever its definition allows.
CREATE TABLE taskserv_settings (
    provider_id text NOT NULL,
    taskserv text NOT NULL,
    enabled boolean NOT NULL,
    PRIMARY KEY (provider_id, taskserv)
);
