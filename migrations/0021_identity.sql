-- Sign-in identities (security review A1, A2).

-- Whether the OpenID provider said the user's email is verified (`email_verified`), as of
-- their last sign-in. Rows from before this column are taken as unverified until then.
ALTER TABLE users
    ADD COLUMN email_verified boolean NOT NULL DEFAULT false;

-- An email links a sign-in to a row only when it is certain: the rows waiting for their
-- first sign-in (made by `grant-admin` or the bootstrap list) and users whose provider
-- verified it share one email at most. An unverified email is only what an account says:
-- several users may say the same one, and none of them gets a row by it.
ALTER TABLE users
    DROP CONSTRAINT users_email_key;
CREATE UNIQUE INDEX users_email_claimed ON users (email) WHERE subject IS NULL OR email_verified;

-- The built-in admin (the admin token's holder) gets an identity no OpenID provider can
-- sign in with, so no email ever links a sign-in to it. A sign-in that had taken it over
-- is undone, with its browser sessions.
UPDATE users
SET issuer         = 'urn:provisioning:builtin',
    subject        = 'admin',
    email          = 'admin@localhost',
    email_verified = false
WHERE id = '00000000-0000-0000-0000-000000000001';
DELETE FROM sessions
WHERE user_id = '00000000-0000-0000-0000-000000000001';

-- A login under way is bound to the browser that started it (login CSRF): the SHA-256 of
-- a random value held in a short-lived cookie of that browser, which the callback needs.
-- Logins under way at the upgrade were not bound: they are dropped (start again).
DELETE FROM oidc_logins;
ALTER TABLE oidc_logins
    ADD COLUMN browser_hash bytea NOT NULL;
