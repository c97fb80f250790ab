-- Wake-ups for the outbox's consumers, sent by PostgreSQL itself: a statement that appends to lifecycle_events
-- notifies within its transaction, so listeners on any node hear it once that transaction commits (and never
-- when it rolls back); PostgreSQL folds the identical notifications of one transaction into one.
-- ledger_wakeup: any event (the ledger prices them all); supervisor_wakeup: a sandbox event (a create, a new
-- deadline, an end), which may move the earliest deadline. Execution events move none.
CREATE FUNCTION notify_lifecycle_consumers() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM appended) THEN
        PERFORM pg_notify('ledger_wakeup', '');
    END IF;
    IF EXISTS (SELECT 1 FROM appended WHERE execution_id IS NULL) THEN
        PERFORM pg_notify('supervisor_wakeup', '');
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER lifecycle_events_wakeups AFTER INSERT ON lifecycle_events
    REFERENCING NEW TABLE AS appended
    FOR EACH STATEMENT EXECUTE FUNCTION notify_lifecycle_consumers();
