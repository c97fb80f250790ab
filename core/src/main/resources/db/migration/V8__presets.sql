-- Organization presets: named sandbox defaults plus setup commands, applied by POST /v1/sandboxes {preset}.
CREATE TABLE presets (
  organization_id text NOT NULL REFERENCES organizations (id),
  name text NOT NULL,
  description text,
  config jsonb NOT NULL,
  setup_commands jsonb NOT NULL,
  created_at timestamptz NOT NULL,
  created_by_api_key_id text,
  PRIMARY KEY (organization_id, name)
);
