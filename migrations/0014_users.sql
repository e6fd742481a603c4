-- Users, their personal API tokens, and who owns each VM.

-- One row per person. Sign-in (OpenID Connect) finds a row by (issuer, subject); a row made
-- by `provisioningd users grant-admin EMAIL` has no subject until its first sign-in.
CREATE TABLE users
(
    id              uuid PRIMARY KEY,
    issuer          text,
    subject         text,
    -- Stored lowercased.
    email           text        NOT NULL UNIQUE,
    name            text,
    role            text        NOT NULL DEFAULT 'user'
        CHECK (role IN ('user', 'admin', 'super_admin')),
    status          text        NOT NULL DEFAULT 'active'
        CHECK (status IN ('active', 'disabled')),
    -- The groups claim of the last sign-in.
    groups          text[]      NOT NULL DEFAULT '{}',
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    last_sign_in_at timestamptz,
    UNIQUE (issuer, subject)
);

-- The built-in admin, the holder of the admin token (`domain::identity::UserId::BUILTIN_ADMIN`).
INSERT INTO users (id, email, name, role)
VALUES ('00000000-0000-0000-0000-000000000001', 'admin@localhost', 'built-in admin', 'super_admin');

-- Personal API tokens (`pat_...`): only the SHA-256 of the secret is kept.
CREATE TABLE api_tokens
(
    id           uuid PRIMARY KEY,
    user_id      uuid        NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name         text        NOT NULL,
    -- The first characters of the secret, shown in lists to tell tokens apart.
    prefix       text        NOT NULL,
    hash         bytea       NOT NULL UNIQUE,
    created_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz,
    -- Recorded at most about once a minute.
    last_used_at timestamptz,
    revoked_at   timestamptz
);

CREATE INDEX api_tokens_user ON api_tokens (user_id, created_at, id);

-- Who owns each VM (the `owner` of its `Requested` event; older events: the built-in admin).
ALTER TABLE vm_views
    ADD COLUMN owner uuid NOT NULL DEFAULT '00000000-0000-0000-0000-000000000001';

CREATE INDEX vm_views_owner_listing ON vm_views (owner, archived, created_at DESC, id);

-- SSH keys registered by the admin token's holder belong to the built-in admin.
UPDATE ssh_keys
SET owner = '00000000-0000-0000-0000-000000000001'
WHERE owner = 'admin';
