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

-- One row per agent run: what the CLI reported and what the run cost. It is the run's LLM-cost line of the
-- ledger (its id is the run's, so a replay adds nothing) and the source of a sandbox's usage totals.
CREATE TABLE agent_runs (
    id                 text PRIMARY KEY,
    organization_id    text NOT NULL REFERENCES organizations (id),
    sandbox_id         text NOT NULL REFERENCES sandboxes (id),
    execution_id       text NOT NULL,
    agent              text NOT NULL,
    session_id         text,
    exit_code          integer,
    error              text,
    input_tokens       bigint NOT NULL,
    output_tokens      bigint NOT NULL,
    cache_read_tokens  bigint NOT NULL,
    cache_write_tokens bigint NOT NULL,
    llm_cost_usd       numeric NOT NULL,
    compute_seconds    numeric NOT NULL,
    compute_cost_usd   numeric NOT NULL,
    duration_ms        bigint NOT NULL,
    created_at         timestamptz NOT NULL
);
CREATE INDEX agent_runs_sandbox ON agent_runs (sandbox_id, agent, created_at);
CREATE INDEX agent_runs_org_time ON agent_runs (organization_id, created_at);

-- Whether the organization's spend limits count its agent runs' LLM cost too (not by default).
ALTER TABLE organization_policies ADD COLUMN include_llm_cost boolean NOT NULL DEFAULT false;
