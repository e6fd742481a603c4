-- The login user of a template's image (cloud-init creates or uses it).
ALTER TABLE templates ADD COLUMN username text NOT NULL DEFAULT 'ubuntu';
