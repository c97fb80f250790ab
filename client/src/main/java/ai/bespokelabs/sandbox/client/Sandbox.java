package ai.bespokelabs.sandbox.client;

import com.fasterxml.jackson.databind.JsonNode;
import java.math.BigDecimal;

/**
 * A sandbox as the gateway answers it (the fields most callers need; timestamps are ISO-8601 strings as sent).
 *
 * @param status {@code creating}, {@code running}, {@code stopping}, {@code destroyed} or {@code failed}
 * @param config the configuration it was created with (env var values never come back)
 * @param version its version, to send as If-Match to {@link SandboxClient#destroy(String, long)}
 * @param placement for {@code backend: "auto"}: {@code requested}, {@code chosen} and every candidate's
 *     {@code backend}, {@code hourly_usd}, {@code status} and {@code reason}; null for a named backend
 */
public record Sandbox(String id, String backend, String status, JsonNode config, String createdAt,
    String expiresAt, String destroyedAt, ProviderError latestError, BigDecimal hourlyRateUsd, String costState,
    long version, String terminationReason, String providerResourceId, String creatorApiKeyName, JsonNode placement) {
}
