package ai.bespokelabs.sandbox.core.config;

import java.math.BigDecimal;
import java.nio.file.Path;
import java.util.Optional;

/**
 * Costs ({@code ledger} in {@code conf/gateway.json}).
 *
 * @param customerMarkup customer cost = provider cost × markup ({@code BESPOKE_CUSTOMER_MARKUP})
 * @param pricingFile pricing catalog ({@code BESPOKE_PRICING_FILE}); empty: the bundled one
 */
public record LedgerConfig(BigDecimal customerMarkup, Optional<Path> pricingFile) {}
