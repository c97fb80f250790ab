-- Invalidation of what gateway nodes cache, sent by PostgreSQL itself at commit on the channel
-- cache_invalidated, so every node hears it whichever node (or operator) made the change:
-- 'key:<api key id>' when a key is revoked, 'policy:<organization id>' when an organization's policy changes,
-- 'route:<sandbox id>' when a running sandbox stops running or moves (its node or provider resource changes).
CREATE FUNCTION notify_cache_invalidated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_TABLE_NAME = 'api_keys' THEN
        PERFORM pg_notify('cache_invalidated', 'key:' || NEW.id);
    ELSIF TG_TABLE_NAME = 'organization_policies' THEN
        PERFORM pg_notify('cache_invalidated', 'policy:' || COALESCE(NEW.organization_id, OLD.organization_id));
    ELSE
        PERFORM pg_notify('cache_invalidated', 'route:' || NEW.id);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER api_keys_revoked AFTER UPDATE OF revoked_at ON api_keys
    FOR EACH ROW WHEN (NEW.revoked_at IS DISTINCT FROM OLD.revoked_at) EXECUTE FUNCTION notify_cache_invalidated();

CREATE TRIGGER organization_policies_changed AFTER INSERT OR UPDATE OR DELETE ON organization_policies
    FOR EACH ROW EXECUTE FUNCTION notify_cache_invalidated();

CREATE TRIGGER sandboxes_route_changed AFTER UPDATE ON sandboxes
    FOR EACH ROW WHEN (OLD.status = 'running' AND NEW.status <> 'running'
        OR OLD.node_id IS DISTINCT FROM NEW.node_id
        OR OLD.provider_resource_id IS DISTINCT FROM NEW.provider_resource_id)
    EXECUTE FUNCTION notify_cache_invalidated();
