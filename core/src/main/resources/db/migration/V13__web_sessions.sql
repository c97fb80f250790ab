-- Dashboard sessions: a product key exchanged for an expiring browser cookie. Only HMACs (with the pepper) of
-- the cookie's token and of the CSRF token are stored. A session is valid while it is neither revoked nor
-- expired and its key is neither revoked nor expired.
CREATE TABLE web_sessions (
    id               text PRIMARY KEY,
    organization_id  text NOT NULL REFERENCES organizations (id),
    api_key_id       text NOT NULL REFERENCES api_keys (id),
    token_digest     text NOT NULL UNIQUE,
    csrf_digest      text NOT NULL,
    created_at       timestamptz NOT NULL,
    last_used_at     timestamptz,
    expires_at       timestamptz NOT NULL,
    revoked_at       timestamptz
);
CREATE INDEX web_sessions_key ON web_sessions (api_key_id);
