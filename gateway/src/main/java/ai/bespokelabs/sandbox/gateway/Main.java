package ai.bespokelabs.sandbox.gateway;

import ai.bespokelabs.sandbox.core.config.ConfigException;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.joran.JoranConfigurator;
import ch.qos.logback.core.joran.spi.JoranException;
import org.slf4j.LoggerFactory;
import ai.bespokelabs.sandbox.core.config.ConfigLoader;
import ai.bespokelabs.sandbox.core.config.GatewayConfig;
import java.time.Clock;
import java.util.HashMap;
import java.util.Map;

/**
 * Entry point: {@code java -jar sandbox-gateway.jar [--host H] [--port P] [--config FILE]}. Flags override
 * {@code HOST}, {@code PORT} and {@code BESPOKE_CONFIG_FILE} wherever else they are set. SIGTERM/SIGINT shut
 * down gracefully.
 */
public final class Main {
  private Main() {}

  public static void main(String[] args) {
    System.setProperty("vertx.logger-delegate-factory-class-name", "io.vertx.core.logging.SLF4JLogDelegateFactory");
    if (System.getProperty("logback.configurationFile") == null) {
      System.setProperty("logback.configurationFile", "conf/logback.xml");
    }
    Map<String, String> flags = new HashMap<>();
    GatewayConfig config = null;
    try {
      for (int i = 0; i < args.length; i++) {
        String flag = args[i];
        String value = i + 1 < args.length ? args[i + 1] : null;
        switch (flag) {
          case "--host" -> flags.put("HOST", require(flag, value));
          case "--port" -> flags.put("PORT", require(flag, value));
          case "--config" -> flags.put("BESPOKE_CONFIG_FILE", require(flag, value));
          case "-h", "--help" -> {
            System.out.println("usage: sandbox-gateway [--host HOST] [--port PORT] [--config FILE]");
            return;
          }
          default -> throw new ConfigException("unknown argument: " + flag);
        }
        i++;
      }
      config = ConfigLoader.fromProcess(flags);
      if (config.operations().jsonLogs()) {
        jsonLogs();
      }
      Gateway gateway = Gateway.start(config, Clock.systemUTC());
      Runtime.getRuntime().addShutdownHook(new Thread(gateway::stop, "gateway-shutdown"));
      if (!config.operations().jsonLogs()) {
        printBanner(gateway); // for a person at a terminal; JSON logs have the gateway's own start line
      }
    } catch (ConfigException e) {
      System.err.println("sandbox-gateway: " + e.getMessage());
      System.exit(2);
    } catch (RuntimeException e) {
      if (config == null || !portInUse(e, config)) {
        throw e;
      }
      System.exit(2);
    }
  }

  /** Says in one line that the port is taken, and how to choose another, when that is why the start failed. */
  private static boolean portInUse(Throwable e, GatewayConfig config) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      // NIO reports a BindException, the native transport an IOException saying so
      if (t instanceof java.net.BindException || t instanceof java.io.IOException && t.getMessage() != null
          && t.getMessage().contains("Address already in use")) {
        String host = config.http().host();
        int port = config.http().port();
        System.err.println("sandbox-gateway: cannot listen on " + host + ":" + port
            + " (address already in use); choose another port with PORT=<port> or --port <port>");
        return true;
      }
    }
    return false;
  }

  /** Switches this process's logging to JSON lines ({@code logback-json.xml} in the jar). */
  private static void jsonLogs() {
    LoggerContext logging = (LoggerContext) LoggerFactory.getILoggerFactory();
    logging.reset();
    JoranConfigurator configurator = new JoranConfigurator();
    configurator.setContext(logging);
    try {
      configurator.doConfigure(Main.class.getClassLoader().getResource("logback-json.xml"));
    } catch (JoranException e) {
      throw new IllegalStateException("logback-json.xml is broken", e);
    }
  }

  private static String require(String flag, String value) {
    if (value == null) {
      throw new ConfigException(flag + " needs a value");
    }
    return value;
  }

  /** Prints how to bootstrap the first organization without ever printing a secret. */
  private static void printBanner(Gateway gateway) {
    GatewayConfig c = gateway.config();
    String host = c.http().host().equals("0.0.0.0") ? "127.0.0.1" : c.http().host();
    String base = "http://" + host + ":" + c.http().port();
    String tokenSource = System.getenv("BESPOKE_CONTROL_PLANE_ADMIN_TOKEN") != null
        ? "$BESPOKE_CONTROL_PLANE_ADMIN_TOKEN"
        : "$(cat " + gateway.secretStore().path(SecretStore.ADMIN_TOKEN_FILE) + ")";
    if (gateway.secretsGenerated()) {
      System.out.println("""

          Sandbox gateway is ready at %s (first start: generated the API-key pepper and admin token in %s).
          Create your first organization and its product key:

            curl -X POST %s/v1/organizations \\
              -H "X-Control-Plane-Admin: %s" \\
              -H 'Content-Type: application/json' \\
              -d '{"name":"Acme"}'
          """.formatted(base, c.node().dataDir(), base, tokenSource));
    } else {
      System.out.println("Sandbox gateway is ready at " + base);
    }
  }
}
