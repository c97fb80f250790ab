-- What providers reported about our resources, and durable claims for cleaning up orphans.
CREATE TABLE provider_observations (
    id                   text PRIMARY KEY,
    organization_id      text NOT NULL,
    sandbox_id           text NOT NULL,
    observation_id       text NOT NULL,
    provider_resource_id text,
    status               text NOT NULL,
    observed_at          timestamptz NOT NULL,
    provider_cost_usd    numeric,
    currency             text NOT NULL DEFAULT 'USD',
    missing              boolean NOT NULL DEFAULT false,
    UNIQUE (sandbox_id, observation_id)
);
CREATE INDEX provider_observations_sandbox ON provider_observations (sandbox_id, observed_at DESC);

CREATE TABLE orphan_cleanups (
    backend              text NOT NULL,
    provider_resource_id text NOT NULL,
    node_id              text NOT NULL,
    status               text NOT NULL CHECK (status IN ('claimed', 'deleted', 'failed')),
    observed_at          timestamptz NOT NULL,
    claimed_at           timestamptz,
    completed_at         timestamptz,
    PRIMARY KEY (backend, provider_resource_id)
);
