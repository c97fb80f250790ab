package ai.bespokelabs.sandbox.core.model;

import io.vertx.sqlclient.Row;
import java.time.OffsetDateTime;
import java.util.List;

/** One row of {@code api_keys} (never the secret, never the digest). */
public record ApiKeyRecord(String id, String organizationId, String name, String prefix, List<String> scopes,
    OffsetDateTime createdAt, OffsetDateTime lastUsedAt, OffsetDateTime expiresAt, OffsetDateTime revokedAt) {

  public static final String COLUMNS =
      "id, organization_id, name, key_prefix, scopes, created_at, last_used_at, expires_at, revoked_at";

  public ApiKeyRecord {
    scopes = List.copyOf(scopes);
  }

  public static ApiKeyRecord from(Row r) {
    return new ApiKeyRecord(r.getString("id"), r.getString("organization_id"), r.getString("name"),
        r.getString("key_prefix"), List.of(r.getArrayOfStrings("scopes")), r.getOffsetDateTime("created_at"),
        r.getOffsetDateTime("last_used_at"), r.getOffsetDateTime("expires_at"), r.getOffsetDateTime("revoked_at"));
  }
}
