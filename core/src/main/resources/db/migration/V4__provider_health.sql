-- Deployment-wide provider health (not tenant data): the last check of each backend.
CREATE TABLE provider_health (
    backend               text PRIMARY KEY,
    status                text NOT NULL CHECK (status IN ('unconfigured', 'unchecked', 'healthy', 'degraded')),
    checked_at            timestamptz NOT NULL,
    message               text NOT NULL,
    checked_by_api_key_id text
);
