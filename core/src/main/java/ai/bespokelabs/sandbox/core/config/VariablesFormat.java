package ai.bespokelabs.sandbox.core.config;

import io.vertx.config.spi.ConfigProcessor;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonObject;

/**
 * The vertx-config format {@value #NAME}: a store's flat settings under their variable names (the
 * environment, system properties, command-line flags) become the nested object of {@code conf/gateway.json};
 * names that are no setting are ignored.
 */
public final class VariablesFormat implements ConfigProcessor {
  public static final String NAME = "bespoke-variables";

  @Override
  public String name() {
    return NAME;
  }

  @Override
  public Future<JsonObject> process(Vertx vertx, JsonObject configuration, Buffer input) {
    try {
      return Future.succeededFuture(Variables.nest(input.toJsonObject(), false, NAME));
    } catch (RuntimeException e) {
      return Future.failedFuture(e);
    }
  }
}
