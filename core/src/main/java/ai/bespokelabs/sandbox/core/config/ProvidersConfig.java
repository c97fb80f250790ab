package ai.bespokelabs.sandbox.core.config;

import java.util.List;
import java.util.Optional;

/**
 * Backends ({@code providers} in {@code conf/gateway.json}).
 *
 * @param allowed backends clients may use ({@code BESPOKE_ALLOWED_BACKENDS}); empty: all available
 * @param settings each provider's own settings ({@code providers.docker}, {@code providers.e2b}, ...)
 */
public record ProvidersConfig(Optional<List<String>> allowed, ProviderSettings settings) {}
