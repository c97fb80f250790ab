package ai.bespokelabs.sandbox.gateway;

import ai.bespokelabs.sandbox.core.config.ConfigLoader;
import ai.bespokelabs.sandbox.core.config.GatewayConfig;
import ai.bespokelabs.sandbox.core.testing.OffsetClock;
import ai.bespokelabs.sandbox.core.testing.TestDatabase;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;

/** A real gateway on a free port, with its own database on the shared embedded PostgreSQL. */
public final class TestGateway implements AutoCloseable {
  public static final String PEPPER = "test-pepper-0123456789abcdef0123456789";
  public static final String ADMIN = "test-admin-token-0123456789abcdef";

  public final OffsetClock clock = new OffsetClock();
  public final Path dataDir;
  public final String databaseUrl;
  public final Gateway gateway;
  public final HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5))
      .version(HttpClient.Version.HTTP_2).build();
  public final String base;

  public TestGateway() {
    this(Map.of());
  }

  private final Map<String, String> env;

  public TestGateway(Map<String, String> overrides) {
    try {
      dataDir = Files.createTempDirectory("gateway-test-");
      // as on a data directory under /var/lib: local programs, unprivileged when the gateway is root, reach
      // their own directory by its path
      Files.setPosixFilePermissions(dataDir, java.nio.file.attribute.PosixFilePermissions.fromString("rwx--x--x"));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    databaseUrl = TestDatabase.newDatabaseUrl();
    env = new HashMap<>();
    env.put("PORT", String.valueOf(freePort()));
    env.put("BESPOKE_DATA_DIR", dataDir.toString());
    env.put("BESPOKE_DATABASE_URL", databaseUrl);
    env.put("BESPOKE_API_KEY_PEPPER", PEPPER);
    env.put("BESPOKE_CONTROL_PLANE_ADMIN_TOKEN", ADMIN);
    env.put("BESPOKE_HTTP_INSTANCES", "2");
    env.put("BESPOKE_DATABASE_POOL_SIZE", "8");
    env.put("BESPOKE_SHUTDOWN_GRACE_SECS", "2");
    env.putAll(overrides);
    GatewayConfig config = ConfigLoader.fromMap(env, System.getProperty("user.home"));
    gateway = Gateway.start(config, clock);
    base = "http://127.0.0.1:" + config.http().port();
  }

  private TestGateway(TestGateway previous) {
    dataDir = previous.dataDir;
    databaseUrl = previous.databaseUrl;
    env = previous.env;
    GatewayConfig config = ConfigLoader.fromMap(env, System.getProperty("user.home"));
    gateway = Gateway.start(config, clock);
    base = "http://127.0.0.1:" + config.http().port();
  }

  /** Stops this gateway (its data stays) and starts another on the same port, data directory and database. */
  public TestGateway restarted() {
    gateway.close();
    return new TestGateway(this);
  }

  public static int freePort() {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** A response with its body parsed lazily. */
  public record Resp(int status, HttpResponse<String> raw) {
    public String body() {
      return raw.body();
    }

    public JsonObject json() {
      return new JsonObject(raw.body());
    }

    public JsonArray array() {
      return new JsonArray(raw.body());
    }

    public Object detail() {
      return json().getValue("detail");
    }

    public String header(String name) {
      return raw.headers().firstValue(name).orElse(null);
    }
  }

  public Resp send(String method, String path, String key, String body, String... headers) {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(base + path)).timeout(Duration.ofSeconds(60));
    if (key != null) {
      b.header("Authorization", "Bearer " + key);
    }
    for (int i = 0; i < headers.length; i += 2) {
      b.header(headers[i], headers[i + 1]);
    }
    if (body != null) {
      b.header("Content-Type", "application/json");
    }
    b.method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body));
    try {
      HttpResponse<String> r = client.send(b.build(), HttpResponse.BodyHandlers.ofString());
      String violation = ContractCheck.violation(method, path, r);
      if (violation != null) {
        throw new AssertionError("the answer does not conform to openapi.json: " + violation);
      }
      return new Resp(r.statusCode(), r);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  public Resp get(String path, String key, String... headers) {
    return send("GET", path, key, null, headers);
  }

  public Resp post(String path, String key, Object body, String... headers) {
    return send("POST", path, key, body == null ? null : body.toString(), headers);
  }

  public Resp delete(String path, String key, String... headers) {
    return send("DELETE", path, key, null, headers);
  }

  /** Bootstraps an organization and returns its initial ({@code *}) product key. */
  public String bootstrap(String name) {
    Resp r = post("/v1/organizations", null, new JsonObject().put("name", name), "X-Control-Plane-Admin", ADMIN);
    if (r.status() != 201) {
      throw new IllegalStateException("bootstrap failed: " + r.status() + " " + r.body());
    }
    return r.json().getJsonObject("api_key").getString("secret");
  }

  /** Issues a key with the given scopes using an admin key of the same organization. */
  public String key(String adminKey, String... scopes) {
    Resp r = post("/v1/api-keys", adminKey, new JsonObject().put("name", "k-" + String.join("-", scopes))
        .put("scopes", new JsonArray(java.util.List.of(scopes))));
    if (r.status() != 201) {
      throw new IllegalStateException("key creation failed: " + r.status() + " " + r.body());
    }
    return r.json().getString("secret");
  }

  /** Creates a running local sandbox and returns its JSON. */
  public JsonObject sandbox(String key, JsonObject extra) {
    JsonObject body = new JsonObject().put("backend", "local");
    if (extra != null) {
      body.mergeIn(extra);
    }
    Resp r = post("/v1/sandboxes", key, body);
    if (r.status() != 201) {
      throw new IllegalStateException("create failed: " + r.status() + " " + r.body());
    }
    return r.json();
  }

  /**
   * The orphan-cleanup status of {@code resourceId} once it is {@code expected} (the row is updated just after
   * the resource is removed), or the last one seen after ten seconds.
   */
  String awaitOrphanStatus(String resourceId, String expected) throws Exception {
    String status = null;
    for (int i = 0; i < 200; i++) {
      var rows = gateway.pool().preparedQuery("SELECT status FROM orphan_cleanups WHERE provider_resource_id = $1")
          .execute(io.vertx.sqlclient.Tuple.of(resourceId)).toCompletionStage().toCompletableFuture()
          .get(10, java.util.concurrent.TimeUnit.SECONDS);
      status = rows.size() == 0 ? null : rows.iterator().next().getString(0);
      if (expected.equals(status)) {
        return status;
      }
      Thread.sleep(50);
    }
    return status;
  }

  @Override
  public void close() {
    gateway.close();
    try (var walk = Files.walk(dataDir)) {
      walk.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException ignored) {
      // best effort
    }
  }
}
