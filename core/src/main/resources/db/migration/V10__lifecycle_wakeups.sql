-- Wake-ups for the outbox's consumers, sent by PostgreSQL itself: a statement that appends to lifecycle_events
-- notifies within its transaction, so listeners on any node hear it once that transaction commits (and never
-- when it rolls back); PostgreSQL folds the identical notifications of one transaction into one.
-- ledger_wakeup: an event the ledger acts on (every one but an execution's start, which it only passes over);
-- supervisor_wakeup: a sandbox event (a create, a new deadline, an end), which may move the earliest deadline.
-- Row triggers with WHEN conditions: a row that matches none costs no function call.
CREATE FUNCTION notify_ledger() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('ledger_wakeup', '');
    RETURN NULL;
END
$$;

CREATE FUNCTION notify_supervisor() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('supervisor_wakeup', '');
    RETURN NULL;
END
$$;

CREATE TRIGGER lifecycle_events_ledger_wakeup AFTER INSERT ON lifecycle_events
    FOR EACH ROW WHEN (NEW.type <> 'execution.started') EXECUTE FUNCTION notify_ledger();

CREATE TRIGGER lifecycle_events_supervisor_wakeup AFTER INSERT ON lifecycle_events
    FOR EACH ROW WHEN (NEW.execution_id IS NULL) EXECUTE FUNCTION notify_supervisor();
