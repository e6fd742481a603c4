-- What made each personal API token, so that a token cannot outlive or outrank it.
ALTER TABLE api_tokens
    -- The token that made this one, when it was made with a token (its expiry caps this one's).
    ADD COLUMN minted_by uuid REFERENCES api_tokens (id) ON DELETE SET NULL,
    -- For tokens made through the admin token (directly, or by a token made so): a SHA-256
    -- of that admin token. Such a token works only while that admin token is the one set.
    ADD COLUMN admin_token_hash bytea;
