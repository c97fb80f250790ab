package ai.bespokelabs.sandbox.core.config;

import ai.bespokelabs.sandbox.core.Secret;
import java.util.Optional;

/**
 * The gateway's own secrets ({@code secrets} in {@code conf/gateway.json}); empty until the composition root
 * resolves them (configured value, else generated and kept in the data directory).
 *
 * @param pepper HMAC key of product keys ({@code BESPOKE_API_KEY_PEPPER})
 * @param adminToken token for creating organizations ({@code BESPOKE_CONTROL_PLANE_ADMIN_TOKEN})
 */
public record SecretsConfig(Optional<Secret> pepper, Optional<Secret> adminToken) {}
