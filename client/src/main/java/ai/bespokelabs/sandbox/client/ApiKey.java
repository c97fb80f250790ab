package ai.bespokelabs.sandbox.client;

import java.util.List;

/** A product key. {@code secret} is set only in the answer that issued it (it is shown once). */
public record ApiKey(String id, String name, String prefix, List<String> scopes, String secret,
    String createdAt, String lastUsedAt, String expiresAt, String revokedAt) {
}
