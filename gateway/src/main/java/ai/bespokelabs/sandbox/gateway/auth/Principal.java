package ai.bespokelabs.sandbox.gateway.auth;

import ai.bespokelabs.sandbox.core.error.ApiException;
import java.util.List;

/**
 * Who is calling: the product key, its organization and scopes, and how it authenticated ({@code "api_key"}:
 * a Bearer header; {@code "session"}: a dashboard session cookie, whose id is {@code sessionId}).
 */
public record Principal(String keyId, String keyName, String organizationId, List<String> scopes, String authMode,
    String sessionId) {

  public boolean has(String scope) {
    return Scopes.grants(scopes, scope);
  }

  /** Throws the contract's 403 unless the key holds {@code scope}. */
  public void require(String scope) {
    if (!has(scope)) {
      throw ApiException.forbidden("API key requires scope: " + scope);
    }
  }
}
