package ai.bespokelabs.sandbox.gateway;

import ai.bespokelabs.sandbox.testkit.Waits;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.Map;

/** The real entry point ({@link Main}) in its own JVM, as an operator runs it. */
public final class GatewayProcess {
  public final Process process;
  public final String base;

  private GatewayProcess(Process process, String host, int port) {
    this.process = process;
    this.base = "http://" + host + ":" + port;
  }

  public static GatewayProcess start(Path dataDir, int port, Map<String, String> env) throws IOException, InterruptedException {
    return start(dataDir, port, env, java.util.List.of());
  }

  /** As {@link #start(Path, int, Map)}, with extra JVM options (e.g. a small heap). */
  static GatewayProcess start(Path dataDir, int port, Map<String, String> env, java.util.List<String> jvmOptions)
      throws IOException, InterruptedException {
    return start(java.util.List.of(), dataDir, "127.0.0.1", port, env, jvmOptions);
  }

  /**
   * As {@link #start(Path, int, Map, java.util.List)}, the JVM started through {@code launcher} (a command that
   * runs the rest of its arguments, such as {@code ip netns exec <namespace>}) and its API reached on
   * {@code host}, which {@code env} has it listen on ({@code HOST}).
   */
  static GatewayProcess start(java.util.List<String> launcher, Path dataDir, String host, int port,
      Map<String, String> env, java.util.List<String> jvmOptions) throws IOException, InterruptedException {
    String javaBin = ProcessHandle.current().info().command().orElse("java");
    java.util.List<String> cmd = new java.util.ArrayList<>(launcher);
    cmd.addAll(java.util.List.of(javaBin, "--enable-native-access=ALL-UNNAMED"));
    cmd.addAll(jvmOptions);
    cmd.addAll(java.util.List.of("-cp", System.getProperty("java.class.path"), Main.class.getName(), "--port",
        String.valueOf(port)));
    ProcessBuilder pb = new ProcessBuilder(cmd)
        .redirectErrorStream(true)
        .redirectOutput(ProcessBuilder.Redirect.appendTo(dataDir.resolve("gateway.log").toFile()));
    pb.environment().put("BESPOKE_DATA_DIR", dataDir.toString());
    pb.environment().putAll(env);
    GatewayProcess g = new GatewayProcess(pb.start(), host, port);
    g.awaitServing();
    return g;
  }

  private void awaitServing() {
    HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    Waits.upTo(60).alias("the gateway started").pollInterval(java.time.Duration.ofMillis(100))
        .failFast("the gateway exited during start-up", () -> !process.isAlive())
        // still starting: refused, or (rarely, on the first connection of a fresh node) accepted and never
        // answered, so each probe has its own short timeout and a new connection
        .ignoreExceptionsInstanceOf(java.io.IOException.class)
        .until(() -> http.send(HttpRequest.newBuilder(URI.create(base + "/healthz"))
            .timeout(java.time.Duration.ofSeconds(2)).build(), HttpResponse.BodyHandlers.ofString()).statusCode() == 200);
  }
}
