-- Node failure in a cluster: a node whose cluster membership ended or whose heartbeat went stale is marked lost
-- once (by whichever surviving node gets there first); its node-hosted sandboxes fail with reason node_lost.
-- Such a sandbox keeps cleanup_status 'pending' until its node returns and kills what is left of it.
ALTER TABLE gateway_nodes ADD COLUMN lost_at timestamptz;
CREATE INDEX sandboxes_node_live ON sandboxes (node_id) WHERE status IN ('creating', 'running', 'stopping');
