-- Foundation schema: tenants, product keys, sandboxes, creation attempts, executions and the
-- lifecycle-event outbox. Money is NUMERIC, times are timestamptz (UTC), ids are <prefix>_<32 hex>.

CREATE TABLE organizations (
    id          text PRIMARY KEY,
    name        text NOT NULL,
    created_at  timestamptz NOT NULL
);

CREATE TABLE api_keys (
    id               text PRIMARY KEY,
    organization_id  text NOT NULL REFERENCES organizations (id),
    name             text NOT NULL,
    key_prefix       text NOT NULL,
    key_digest       text NOT NULL UNIQUE,        -- HMAC-SHA256(pepper, secret), hex; never the secret
    scopes           text[] NOT NULL,
    created_at       timestamptz NOT NULL,
    last_used_at     timestamptz,
    expires_at       timestamptz,
    revoked_at       timestamptz
);
CREATE INDEX api_keys_org ON api_keys (organization_id, created_at);

CREATE TABLE sandboxes (
    id                        text PRIMARY KEY,
    organization_id           text NOT NULL REFERENCES organizations (id),
    backend                   text NOT NULL,
    status                    text NOT NULL CHECK (status IN ('creating', 'running', 'stopping', 'destroyed', 'failed')),
    config                    jsonb NOT NULL,     -- env var values are never stored, only env_var_names
    created_at                timestamptz NOT NULL,
    destroyed_at              timestamptz,
    error                     text,
    idempotency_key           text,
    request_fingerprint       text,
    create_token              text NOT NULL,      -- stamped on provider resources so an ambiguous create can be found
    node_id                   text NOT NULL,      -- gateway node that hosts node-bound runtimes
    provider_resource_id      text,
    latest_error              jsonb,
    retry_status              text NOT NULL DEFAULT 'not_applicable',
    cleanup_status            text,
    requested_at              timestamptz,
    provisioning_at           timestamptz,
    running_at                timestamptz,
    stopping_at               timestamptz,
    terminated_at             timestamptz,
    failed_at                 timestamptz,
    last_provider_observed_at timestamptz,
    hourly_rate_usd           numeric NOT NULL DEFAULT 0,
    currency                  text NOT NULL DEFAULT 'USD',
    pricing_source            text NOT NULL DEFAULT 'bundled',
    cost_state                text NOT NULL DEFAULT 'estimated',
    provider_missing          boolean NOT NULL DEFAULT false,
    creator_api_key_id        text REFERENCES api_keys (id),
    version                   integer NOT NULL DEFAULT 1,
    expires_at                timestamptz,
    terminated_by_api_key_id  text REFERENCES api_keys (id),
    termination_reason        text,
    supervision_owner         text,
    supervision_claimed_at    timestamptz
);
CREATE UNIQUE INDEX sandboxes_idempotency ON sandboxes (organization_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
CREATE INDEX sandboxes_org_created ON sandboxes (organization_id, created_at DESC, id DESC);
CREATE INDEX sandboxes_expiry ON sandboxes (expires_at, status);

CREATE TABLE sandbox_creation_attempts (
    id                   text PRIMARY KEY,
    sandbox_id           text NOT NULL REFERENCES sandboxes (id),
    attempt_number       integer NOT NULL,
    status               text NOT NULL CHECK (status IN ('creating', 'succeeded', 'failed')),
    error                jsonb,
    retry_status         text NOT NULL DEFAULT 'not_applicable',
    cleanup_status       text,
    provider_resource_id text,
    started_at           timestamptz NOT NULL,
    completed_at         timestamptz,
    UNIQUE (sandbox_id, attempt_number)
);

-- No foreign keys here: rows are only ever inserted by selecting the sandbox row in the same statement,
-- and a key-share lock on the sandbox for every execution would serialize concurrent executions.
CREATE TABLE executions (
    id               text PRIMARY KEY,
    organization_id  text NOT NULL,
    sandbox_id       text NOT NULL,
    request_id       text NOT NULL,
    api_key_id       text,
    status           text NOT NULL CHECK (status IN ('running', 'completed', 'failed', 'timed_out', 'cancelled')),
    stdin_open       boolean NOT NULL DEFAULT false,
    node_id          text,                -- node whose adapter runs it (for attach, stdin, signal)
    response         text,                -- JSON text: program output may hold NUL characters, which jsonb refuses
    error            jsonb,
    exit_code        integer,
    duration_ms      bigint,
    created_at       timestamptz NOT NULL,
    completed_at     timestamptz,
    UNIQUE (organization_id, sandbox_id, request_id)
);
CREATE INDEX executions_sandbox ON executions (sandbox_id, created_at DESC);

-- The outbox: every state change of a sandbox or execution writes one row here in the same
-- transaction. Bus publishes are only wake-ups. Consumers read in (txid, seq) order and only rows of
-- transactions older than the oldest one still running, so a row that commits late is never skipped.
CREATE TABLE lifecycle_events (
    seq              bigserial PRIMARY KEY,
    txid             xid8 NOT NULL DEFAULT pg_current_xact_id(),
    id               text NOT NULL UNIQUE,
    organization_id  text NOT NULL,
    sandbox_id       text NOT NULL,
    execution_id     text,
    type             text NOT NULL,
    status           text,
    occurred_at      timestamptz NOT NULL,
    data             jsonb NOT NULL DEFAULT '{}'::jsonb
);
CREATE INDEX lifecycle_events_sandbox ON lifecycle_events (sandbox_id, seq);
CREATE INDEX lifecycle_events_order ON lifecycle_events (txid, seq);

-- Progress of each outbox consumer; advanced in the same transaction as the work it did.
CREATE TABLE outbox_offsets (
    consumer    text PRIMARY KEY,
    last_txid   xid8 NOT NULL DEFAULT '0',
    last_seq    bigint NOT NULL DEFAULT 0,
    updated_at  timestamptz NOT NULL
);

-- Gateway nodes and their last heartbeat (written by the supervisor on each node).
CREATE TABLE gateway_nodes (
    node_id      text PRIMARY KEY,
    started_at   timestamptz NOT NULL,
    heartbeat_at timestamptz NOT NULL
);
