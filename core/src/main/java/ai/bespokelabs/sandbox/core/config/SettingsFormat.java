package ai.bespokelabs.sandbox.core.config;

import io.vertx.config.spi.ConfigProcessor;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonObject;

/** A vertx-config format that turns one store's settings into the nested object of {@code conf/gateway.json}. */
abstract class SettingsFormat implements ConfigProcessor {
  private final String name;
  private final boolean strict;

  SettingsFormat(String name, boolean strict) {
    this.name = name;
    this.strict = strict;
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public Future<JsonObject> process(Vertx vertx, JsonObject configuration, Buffer input) {
    String source = strict ? configuration.getString("path", name) : name;
    JsonObject given;
    try {
      given = input.toJsonObject();
    } catch (DecodeException | ClassCastException e) {
      return Future.failedFuture(new ConfigException(source + " is not a JSON object"));
    }
    try {
      return Future.succeededFuture(Variables.nest(given, strict, source));
    } catch (RuntimeException e) {
      return Future.failedFuture(e);
    }
  }
}
