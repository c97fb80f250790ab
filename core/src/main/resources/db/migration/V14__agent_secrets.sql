-- Organizations' stored credentials for agent CLIs (ANTHROPIC_API_KEY and the like), sealed with AES-256-GCM
-- under a key derived from the server's secret, bound to the organization and name. Never stored in clear,
-- never returned.
CREATE TABLE agent_secrets (
    organization_id  text NOT NULL REFERENCES organizations (id),
    name             text NOT NULL,
    sealed           bytea NOT NULL,
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL,
    updated_by_api_key_id text,
    PRIMARY KEY (organization_id, name)
);
