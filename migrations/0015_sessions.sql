-- Sign-in with OpenID Connect: the logins under way and the browser sessions.

-- A login between the redirect to the provider and its callback. The `state` is known by
-- its SHA-256 only; the row is deleted when the callback uses it, so a state works once.
CREATE TABLE oidc_logins
(
    state_hash    bytea PRIMARY KEY,
    -- The PKCE verifier and the nonce the ID token must carry.
    pkce_verifier text        NOT NULL,
    nonce         text        NOT NULL,
    -- A same-site path, checked when the login started.
    return_to     text        NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX oidc_logins_created ON oidc_logins (created_at);

-- A signed-in browser. The cookie holds a random id; only its SHA-256 is stored. Role and
-- status are the user's, read on every request, never copied here.
CREATE TABLE sessions
(
    id_hash          bytea PRIMARY KEY,
    user_id          uuid        NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    -- The provider's tokens: never logged nor answered. The ID token is the hint of the
    -- provider's end-session URL.
    access_token     text        NOT NULL,
    refresh_token    text,
    id_token         text,
    -- When the access token expires: then it is refreshed, or the session ends.
    access_expires_at timestamptz,
    created_at       timestamptz NOT NULL DEFAULT now(),
    expires_at       timestamptz NOT NULL
);

CREATE INDEX sessions_user ON sessions (user_id);
CREATE INDEX sessions_expires ON sessions (expires_at);
