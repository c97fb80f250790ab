-- Executions still running, found at start (this node's, after a crash) and by the supervisor (those whose
-- sandbox ended) without reading the whole table.
CREATE INDEX executions_running ON executions (node_id) WHERE status = 'running';
