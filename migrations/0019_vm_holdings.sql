-- What each owner holds: their VMs not destroyed, counted by provider and template. Kept
-- by the projector beside `vm_views` in the same transaction (`store::views::save_many`),
-- so a quota check reads a row per template instead of every VM its caller holds.
CREATE TABLE vm_holdings (
    owner    uuid   NOT NULL,
    provider text   NOT NULL,
    template text   NOT NULL,
    vms      bigint NOT NULL,
    PRIMARY KEY (owner, provider, template)
);

-- Rows whose count fell to zero, removed after each write.
CREATE INDEX vm_holdings_empty ON vm_holdings (owner) WHERE vms = 0;

INSERT INTO vm_holdings (owner, provider, template, vms)
SELECT owner, provider, template, count(*)
FROM vm_views
WHERE status <> 'destroyed'
GROUP BY owner, provider, template;
