package ai.bespokelabs.sandbox.gateway;

import io.vertx.core.json.JsonObject;
import java.net.http.HttpClient;
import java.nio.file.Path;
import java.util.Map;

/** A real gateway ({@link TestGateway}) for the attack tests of package {@code security}. */
public final class SecurityGateway implements AutoCloseable {
  private final TestGateway gw;

  public SecurityGateway(Map<String, String> env) {
    gw = new TestGateway(env);
  }

  public String base() {
    return gw.base;
  }

  public HttpClient client() {
    return gw.client;
  }

  public Path dataDir() {
    return gw.dataDir;
  }

  /** A new organization's {@code *} key. */
  public String organization(String name) {
    return gw.bootstrap(name);
  }

  /** Creates a running sandbox ({@code local} unless {@code body} names a backend). */
  public JsonObject sandbox(String key, JsonObject body) {
    return gw.sandbox(key, body);
  }

  /** A response: its status and body. */
  public record Response(int status, String body) {
    public JsonObject json() {
      return new JsonObject(body);
    }
  }

  public Response send(String method, String path, String key, String jsonBody) {
    TestGateway.Resp r = gw.send(method, path, key, jsonBody);
    return new Response(r.status(), r.body());
  }

  @Override
  public void close() {
    gw.close();
  }
}
