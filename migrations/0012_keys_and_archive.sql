-- SSH keys users register once and name in VM requests, and archived VMs.

-- The public half only: a generated key's private half is answered once and never stored.
-- `owner` is who registered it (today always `admin`); every query names it.
CREATE TABLE ssh_keys
(
    id          uuid PRIMARY KEY,
    owner       text        NOT NULL,
    name        text        NOT NULL,
    -- The OpenSSH line, `<type> <base64> [comment]`, as normalized by the domain.
    public_key  text        NOT NULL,
    algorithm   text        NOT NULL,
    -- `SHA256:...` as `ssh-keygen -l` prints it: the same key (whatever its comment) has the
    -- same fingerprint, so one owner registers a key once.
    fingerprint text        NOT NULL,
    created_at  timestamptz NOT NULL,
    UNIQUE (owner, fingerprint)
);

CREATE INDEX ssh_keys_owner_created ON ssh_keys (owner, created_at, id);

-- Archived VMs are left out of the default list (`Archived` events; rebuilt like the rest).
ALTER TABLE vm_views
    ADD COLUMN archived boolean NOT NULL DEFAULT false;

-- The list: newest first, by archived or not, then by page (`created_at DESC, id`).
CREATE INDEX vm_views_listing ON vm_views (archived, created_at DESC, id);
