package ai.bespokelabs.sandbox.core.config;

import ai.bespokelabs.sandbox.core.Secret;
import java.util.Optional;

/**
 * The database ({@code database} in {@code conf/gateway.json}).
 *
 * @param url external PostgreSQL ({@code BESPOKE_DATABASE_URL}); empty: the embedded one
 * @param poolSize connections in the reactive pool ({@code BESPOKE_DATABASE_POOL_SIZE})
 */
public record DatabaseConfig(Optional<Secret> url, int poolSize) {}
