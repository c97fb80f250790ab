-- backend "auto": the decision a sandbox was placed by, and an organization's default backend.
ALTER TABLE sandboxes ADD COLUMN placement jsonb;
ALTER TABLE sandbox_creation_attempts ADD COLUMN backend text;
ALTER TABLE organization_policies ADD COLUMN default_backend text;
