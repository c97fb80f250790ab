-- The cost ledger: lifecycle cost per sandbox with an idempotent delta ledger, and per-execution usage.

CREATE TABLE lifecycle_costs (
    sandbox_id                 text PRIMARY KEY REFERENCES sandboxes (id),
    organization_id            text NOT NULL,
    billable_seconds           numeric NOT NULL,
    estimated_cost_usd         numeric NOT NULL,
    provider_reported_cost_usd numeric,
    effective_cost_usd         numeric NOT NULL,
    customer_cost_usd          numeric NOT NULL,
    currency                   text NOT NULL,
    pricing_source             text NOT NULL,
    cost_state                 text NOT NULL CHECK (cost_state IN ('estimated', 'reconciled')),
    updated_at                 timestamptz NOT NULL
);

-- One row per applied observation: a replayed observation finds its row and changes nothing.
CREATE TABLE lifecycle_observations (
    sandbox_id     text NOT NULL,
    observation_id text NOT NULL,
    PRIMARY KEY (sandbox_id, observation_id)
);

-- Deltas, split at UTC midnight so later adjustments never move usage between reporting days.
CREATE TABLE lifecycle_ledger_entries (
    id                     text PRIMARY KEY,
    organization_id        text NOT NULL,
    sandbox_id             text NOT NULL,
    observation_id         text NOT NULL,
    billable_seconds_delta numeric NOT NULL,
    provider_delta_usd     numeric NOT NULL,
    customer_delta_usd     numeric NOT NULL,
    cost_state             text NOT NULL,
    created_at             timestamptz NOT NULL,
    UNIQUE (sandbox_id, observation_id)
);
CREATE INDEX lifecycle_ledger_org_time ON lifecycle_ledger_entries (organization_id, created_at);

CREATE TABLE usage_events (
    id                text PRIMARY KEY,
    organization_id   text NOT NULL,
    sandbox_id        text NOT NULL,
    execution_id      text,
    request_id        text NOT NULL,
    metric            text NOT NULL,
    quantity          numeric NOT NULL,
    unit              text NOT NULL,
    provider_cost_usd numeric NOT NULL,
    customer_cost_usd numeric NOT NULL,
    created_at        timestamptz NOT NULL,
    UNIQUE (organization_id, sandbox_id, request_id, metric)
);
CREATE INDEX usage_events_org_time ON usage_events (organization_id, created_at);

CREATE TABLE ledger_entries (
    id              text PRIMARY KEY,
    organization_id text NOT NULL,
    sandbox_id      text NOT NULL,
    usage_event_id  text NOT NULL,
    kind            text NOT NULL CHECK (kind IN ('provider_cost', 'customer_cost')),
    amount_usd      numeric NOT NULL,
    price_version   text NOT NULL,
    created_at      timestamptz NOT NULL,
    UNIQUE (usage_event_id, kind)
);
