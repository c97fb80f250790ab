-- Sandbox logs are read oldest first by event time, paged on (occurred_at, seq).
CREATE INDEX lifecycle_events_sandbox_time ON lifecycle_events (sandbox_id, occurred_at, seq);
