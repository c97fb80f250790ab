package ai.bespokelabs.sandbox.core.config;

import io.vertx.config.spi.ConfigProcessor;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonObject;

/**
 * The vertx-config format {@value #NAME} of the file named by {@code BESPOKE_CONFIG_FILE}: a JSON object
 * with settings under their variable names or in the nested layout of {@code conf/gateway.json}; any other
 * name stops the start, naming it.
 */
public final class ConfigFileFormat implements ConfigProcessor {
  public static final String NAME = "bespoke-config-file";

  @Override
  public String name() {
    return NAME;
  }

  @Override
  public Future<JsonObject> process(Vertx vertx, JsonObject configuration, Buffer input) {
    String source = configuration.getString("path", Variables.CONFIG_FILE);
    JsonObject given;
    try {
      given = input.toJsonObject();
    } catch (DecodeException | ClassCastException e) {
      return Future.failedFuture(new ConfigException(source + " is not a JSON object"));
    }
    try {
      return Future.succeededFuture(Variables.nest(given, true, source));
    } catch (RuntimeException e) {
      return Future.failedFuture(e);
    }
  }
}
