-- The catalog of providers and templates users choose from.

CREATE TABLE providers
(
    id         text PRIMARY KEY,
    name       text    NOT NULL,
    enabled    boolean NOT NULL DEFAULT true,
    sort_order integer NOT NULL DEFAULT 0
);

CREATE TABLE templates
(
    provider_id text    NOT NULL REFERENCES providers (id),
    id          text    NOT NULL,
    name        text    NOT NULL,
    description text    NOT NULL DEFAULT '',
    flavor_name text    NOT NULL,
    image_name  text    NOT NULL,
    cpu         integer NOT NULL,
    ram_gb      integer NOT NULL,
    storage_gb  integer NOT NULL,
    gpu         text,
    tags        text[]  NOT NULL DEFAULT '{}',
    enabled     boolean NOT NULL DEFAULT true,
    sort_order  integer NOT NULL DEFAULT 0,
    PRIMARY KEY (provider_id, id)
);

INSERT INTO providers (id, name, enabled, sort_order)
VALUES ('local', 'Local (development, no cloud)', true, 100);

INSERT INTO templates (provider_id, id, name, description, flavor_name, image_name, cpu, ram_gb,
                       storage_gb, tags, sort_order)
VALUES ('local', 'small', 'Small', 'One core for trying things out.', 'local.small', 'debian-12',
        1, 2, 10, '{development}', 1),
       ('local', 'medium', 'Medium', 'Two cores.', 'local.medium', 'debian-12', 2, 4, 20,
        '{development}', 2),
       ('local', 'large', 'Large', 'Four cores.', 'local.large', 'ubuntu-24.04', 4, 8, 40,
        '{development}', 3),
       ('local', 'broken', 'Broken (always fails)',
        'Its flavor fails the provider''s validation rule: shows how a failed Terraform run looks.',
        'local.broken', 'debian-12', 1, 1, 1, '{development,testing}', 9);
