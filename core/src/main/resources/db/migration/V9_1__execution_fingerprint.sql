-- The HMAC of an execute request's canonical body: the same Idempotency-Key with another body is a 409,
-- as for creates. Rows from before this column have none and replay as they did.
ALTER TABLE executions ADD COLUMN request_fingerprint text;
