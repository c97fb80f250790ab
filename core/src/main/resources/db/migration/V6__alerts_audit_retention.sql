-- Tenant alerts (configuration and deduplicated events), the append-only audit trail, retention periods.
CREATE TABLE alert_configurations (
    organization_id                  text PRIMARY KEY REFERENCES organizations (id),
    budget_threshold_percent         integer,
    repeated_failures_count          integer,
    repeated_failures_window_minutes integer NOT NULL DEFAULT 60,
    provider_degradation_enabled     boolean NOT NULL DEFAULT true,
    long_running_secs                integer,
    failed_cleanup_enabled           boolean NOT NULL DEFAULT true,
    version                          integer NOT NULL,
    updated_at                       timestamptz NOT NULL,
    updated_by_api_key_id            text
);

CREATE TABLE alert_events (
    id              text PRIMARY KEY,
    organization_id text NOT NULL,
    alert_type      text NOT NULL,
    severity        text NOT NULL CHECK (severity IN ('warning', 'critical')),
    message         text NOT NULL,
    resource_type   text,
    resource_id     text,
    dedupe_key      text NOT NULL,
    created_at      timestamptz NOT NULL,
    UNIQUE (organization_id, dedupe_key)
);
CREATE INDEX alert_events_org ON alert_events (organization_id, created_at DESC, id DESC);

CREATE TABLE audit_log (
    id              text PRIMARY KEY,
    organization_id text NOT NULL,
    api_key_id      text,
    session_id      text,
    action          text NOT NULL,
    resource_type   text NOT NULL,
    resource_id     text NOT NULL,
    outcome         text NOT NULL CHECK (outcome IN ('success', 'denied', 'failure')),
    details         jsonb NOT NULL,
    created_at      timestamptz NOT NULL
);
CREATE INDEX audit_log_org ON audit_log (organization_id, created_at DESC, id DESC);

CREATE TABLE retention_policies (
    organization_id       text PRIMARY KEY REFERENCES organizations (id),
    operational_days      integer NOT NULL,
    audit_days            integer NOT NULL,
    version               integer NOT NULL,
    updated_at            timestamptz NOT NULL,
    updated_by_api_key_id text
);
