-- Per-organization guardrails and the record of every create they refused.

CREATE TABLE organization_policies (
    organization_id           text PRIMARY KEY REFERENCES organizations (id),
    max_concurrent_sandboxes  integer,
    hourly_spend_limit_usd    numeric,
    daily_spend_limit_usd     numeric,
    allowed_backends          text[],
    allowed_gpu_types         text[],
    max_sandbox_lifetime_secs integer,
    version                   integer NOT NULL,
    updated_at                timestamptz NOT NULL,
    updated_by_api_key_id     text
);

CREATE TABLE policy_denials (
    id                     text PRIMARY KEY,
    organization_id        text NOT NULL REFERENCES organizations (id),
    api_key_id             text,
    policy                 text NOT NULL,
    message                text NOT NULL,
    backend                text,
    gpu                    text,
    requested_timeout_secs integer,
    current_value          text,
    limit_value            text,
    created_at             timestamptz NOT NULL
);
CREATE INDEX policy_denials_org ON policy_denials (organization_id, created_at DESC, id DESC);
CREATE INDEX sandboxes_org_active ON sandboxes (organization_id) WHERE status IN ('creating', 'running', 'stopping');
