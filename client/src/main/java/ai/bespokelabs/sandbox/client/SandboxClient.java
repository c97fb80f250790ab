package ai.bespokelabs.sandbox.client;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * A client of the sandbox gateway's API, safe to share between threads:
 *
 * <pre>{@code
 * SandboxClient client = SandboxClient.builder().url("http://127.0.0.1:8000").apiKey(key).build();
 * Sandbox sbx = client.create(CreateSandbox.on("local").withTimeoutSecs(600));
 * ExecutionResult r = client.execute(sbx.id(), ExecuteRequest.shell("echo hi"));
 * client.destroy(sbx.id());
 * }</pre>
 *
 * Every error answer is thrown as a {@link SandboxException} (a {@link ProviderException} or
 * {@link PolicyDeniedException} where the contract says so); calls that are safe to repeat (reads, and the
 * creates and executions made idempotent by their {@code Idempotency-Key}) are retried when the error is
 * {@code retryable}, after the provider's {@code retry_after_ms} when it gives one. I/O failures surface as
 * {@link UncheckedIOException}.
 */
public final class SandboxClient {
  private static final int PAGE = 100;

  private final Transport t;
  private final int streamReconnects;
  private final Duration streamHeartbeat;

  private SandboxClient(Transport transport, int streamReconnects, Duration streamHeartbeat) {
    this.t = transport;
    this.streamReconnects = streamReconnects;
    this.streamHeartbeat = streamHeartbeat;
  }

  public static Builder builder() {
    return new Builder();
  }

  /** Settings of a {@link SandboxClient}; {@code url} is required. */
  public static final class Builder {
    private URI url;
    private String apiKey;
    private Duration timeout = Duration.ofMinutes(10);
    private Duration connectTimeout = Duration.ofSeconds(10);
    private Retry retry = Retry.DEFAULT;
    private int streamReconnects = 10;
    private Duration streamHeartbeat = Duration.ofSeconds(5);
    private HttpClient http;

    /** The gateway's base URL, such as {@code http://127.0.0.1:8000}. */
    public Builder url(String value) {
      this.url = URI.create(value.endsWith("/") ? value.substring(0, value.length() - 1) : value);
      return this;
    }

    /** The product key ({@code bsk_live_…}) sent as a bearer token. */
    public Builder apiKey(String value) {
      this.apiKey = value;
      return this;
    }

    /** How long one request may take, executions included (10 minutes by default). */
    public Builder timeout(Duration value) {
      this.timeout = value;
      return this;
    }

    public Builder connectTimeout(Duration value) {
      this.connectTimeout = value;
      return this;
    }

    /** When to repeat a failed call ({@link Retry#DEFAULT}: three tries). */
    public Builder retry(Retry value) {
      this.retry = value;
      return this;
    }

    /** How many times in a row a stream may fail to reconnect before it gives up (10 by default). */
    public Builder streamReconnects(int value) {
      this.streamReconnects = value;
      return this;
    }

    /**
     * How often a stream pings the gateway (5 s by default); a connection silent for three of these is taken
     * for dropped and resumed on a new one.
     */
    public Builder streamHeartbeat(Duration value) {
      this.streamHeartbeat = value;
      return this;
    }

    /** An HTTP client of your own (its executor, proxy, TLS settings); otherwise one is made. */
    public Builder httpClient(HttpClient value) {
      this.http = value;
      return this;
    }

    public SandboxClient build() {
      if (url == null) {
        throw new IllegalStateException("url is required");
      }
      HttpClient client = http != null ? http : HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
          .connectTimeout(connectTimeout).followRedirects(HttpClient.Redirect.NEVER).build();
      return new SandboxClient(new Transport(client, url, apiKey, timeout, retry), streamReconnects,
          streamHeartbeat);
    }
  }

  // ---- sandboxes

  /** Creates a sandbox under a fresh idempotency key (so retries never create two). */
  public Sandbox create(CreateSandbox body) {
    return create(body, newKey());
  }

  /** Creates a sandbox; the same key with the same body answers the same sandbox. */
  public Sandbox create(CreateSandbox body, String idempotencyKey) {
    return json(() -> t.request("/v1/sandboxes", null).header("Idempotency-Key", idempotencyKey)
        .header("Content-Type", "application/json").POST(Transport.json(body)).build(), Sandbox.class);
  }

  public Sandbox get(String sandboxId) {
    return json(() -> t.request(sandbox(sandboxId), null).GET().build(), Sandbox.class);
  }

  /** Every sandbox of the organization, newest first (fetched page by page). */
  public List<Sandbox> list() {
    List<Sandbox> all = new ArrayList<>();
    String cursor = null;
    do {
      Page<Sandbox> page = listPage(PAGE, cursor);
      all.addAll(page.items());
      cursor = page.nextCursor();
    } while (cursor != null);
    return all;
  }

  /** One page of at most {@code limit} sandboxes, from {@code cursor} (null: the first page). */
  public Page<Sandbox> listPage(int limit, String cursor) {
    return page(() -> t.request("/v1/sandboxes", query("limit", limit, "cursor", cursor)).GET().build(),
        new TypeReference<List<Sandbox>>() { });
  }

  /** Destroys a sandbox whatever its version; repeating it answers the same. */
  public Sandbox destroy(String sandboxId) {
    return json(() -> t.request(sandbox(sandboxId), null).DELETE().build(), Sandbox.class);
  }

  /** Destroys a sandbox only if it is still at {@code version} (409 otherwise). */
  public Sandbox destroy(String sandboxId, long version) {
    return json(() -> t.request(sandbox(sandboxId), null).header("If-Match", String.valueOf(version)).DELETE()
        .build(), Sandbox.class);
  }

  /** Every log entry of a sandbox, oldest first (fetched page by page). */
  public List<LogEntry> logs(String sandboxId) {
    List<LogEntry> all = new ArrayList<>();
    String cursor = null;
    do {
      Page<LogEntry> page = logsPage(sandboxId, null, 1000, cursor);
      all.addAll(page.items());
      cursor = page.nextCursor();
    } while (cursor != null);
    return all;
  }

  /** One page of a sandbox's log: entries after {@code since} (ISO-8601, or null), from {@code cursor}. */
  public Page<LogEntry> logsPage(String sandboxId, String since, int limit, String cursor) {
    return page(() -> t.request(sandbox(sandboxId) + "/logs", query("since", since, "limit", limit, "cursor",
        cursor)).GET().build(), new TypeReference<List<LogEntry>>() { });
  }

  // ---- executions

  /** Runs code or a command and waits for its result, under a fresh idempotency key. */
  public ExecutionResult execute(String sandboxId, ExecuteRequest body) {
    return execute(sandboxId, body, newKey());
  }

  /** Runs and waits; the same key replays the stored result (also after the sandbox ended). */
  public ExecutionResult execute(String sandboxId, ExecuteRequest body, String idempotencyKey) {
    return json(() -> t.request(sandbox(sandboxId) + "/execute", null).header("Idempotency-Key", idempotencyKey)
        .header("Content-Type", "application/json").header("Accept", "application/json")
        .POST(Transport.json(body)).build(), ExecutionResult.class);
  }

  /** Starts an execution without waiting for it, under a fresh idempotency key; watch it with {@link #stream}. */
  public Execution start(String sandboxId, ExecuteRequest body) {
    return start(sandboxId, body, newKey());
  }

  public Execution start(String sandboxId, ExecuteRequest body, String idempotencyKey) {
    return json(() -> t.request(sandbox(sandboxId) + "/executions", null).header("Idempotency-Key",
        idempotencyKey).header("Content-Type", "application/json").POST(Transport.json(body)).build(),
        Execution.class);
  }

  public Execution execution(String sandboxId, String executionId) {
    return json(() -> t.request(executionPath(sandboxId, executionId), null).GET().build(), Execution.class);
  }

  /** The execution's events from its first one, over a WebSocket that resumes after a drop. */
  public ExecutionStream stream(String sandboxId, String executionId) {
    return stream(sandboxId, executionId, 0);
  }

  /** The execution's events after sequence number {@code afterSeq}. */
  public ExecutionStream stream(String sandboxId, String executionId, long afterSeq) {
    return new ExecutionStream(t, sandboxId, executionId, afterSeq, streamReconnects, streamHeartbeat);
  }

  /** Writes bytes to the stdin of an execution started with {@code stdin} true. */
  public void stdin(String sandboxId, String executionId, byte[] data) {
    t.send(() -> t.request(executionPath(sandboxId, executionId) + "/stdin", null)
        .header("Content-Type", "application/octet-stream").POST(HttpRequest.BodyPublishers.ofByteArray(data))
        .build(), false);
  }

  /** Closes the execution's stdin (the program reads end of file). */
  public void closeStdin(String sandboxId, String executionId) {
    t.send(() -> t.request(executionPath(sandboxId, executionId) + "/stdin", Map.of("eof", true))
        .POST(HttpRequest.BodyPublishers.noBody()).build(), true);
  }

  /** Sends {@code TERM}, {@code KILL} or {@code INT} to the execution's whole process group. */
  public void signal(String sandboxId, String executionId, String signal) {
    t.send(() -> t.request(executionPath(sandboxId, executionId) + "/signal", null)
        .header("Content-Type", "application/json").POST(Transport.json(Map.of("signal", signal))).build(), true);
  }

  // ---- files

  /** The entries of a directory of the sandbox. */
  public List<FileEntry> listFiles(String sandboxId, String path) {
    JsonNode body = Json.tree(t.send(() -> t.request(sandbox(sandboxId) + "/files", Map.of("path", path)).GET()
        .build(), true).body());
    return Json.MAPPER.convertValue(body.path("entries"), new TypeReference<List<FileEntry>>() { });
  }

  /** Uploads a stream as a file (sent as it is read; not retried, as a stream cannot be read twice). */
  public void upload(String sandboxId, String path, InputStream content, boolean executable) {
    t.send(() -> t.request(sandbox(sandboxId) + "/files/content", query("path", path, "executable",
        executable ? true : null)).header("Content-Type", "application/octet-stream")
        .PUT(HttpRequest.BodyPublishers.ofInputStream(() -> content)).build(), false);
  }

  /** Uploads a local file (streamed from disk), executable in the sandbox when it is executable here. */
  public void upload(String sandboxId, String path, Path local) {
    boolean executable = Files.isExecutable(local);
    t.send(() -> t.request(sandbox(sandboxId) + "/files/content", query("path", path, "executable",
        executable ? true : null)).header("Content-Type", "application/octet-stream").PUT(ofFile(local)).build(),
        true);
  }

  /** Downloads a file into {@code out} as it arrives (the stream is not closed); answers the bytes copied. */
  public long download(String sandboxId, String path, OutputStream out) {
    return copy(sandbox(sandboxId) + "/files/content", path, out);
  }

  /** Downloads a file to a local path, replacing it only once the whole file arrived. */
  public long download(String sandboxId, String path, Path local) {
    return toFile(local, out -> download(sandboxId, path, out));
  }

  /** Deletes a file or an empty directory ({@code recursive}: a whole tree). */
  public void deleteFile(String sandboxId, String path, boolean recursive) {
    t.send(() -> t.request(sandbox(sandboxId) + "/files", query("path", path, "recursive",
        recursive ? true : null)).DELETE().build(), true);
  }

  /** Extracts a gzip-compressed tar (entries relative to {@code dir}) into a directory of the sandbox. */
  public void uploadArchive(String sandboxId, String dir, InputStream tarGz) {
    t.send(() -> t.request(sandbox(sandboxId) + "/files/archive", Map.of("path", dir))
        .header("Content-Type", "application/gzip").PUT(HttpRequest.BodyPublishers.ofInputStream(() -> tarGz))
        .build(), false);
  }

  public void uploadArchive(String sandboxId, String dir, Path tarGz) {
    t.send(() -> t.request(sandbox(sandboxId) + "/files/archive", Map.of("path", dir))
        .header("Content-Type", "application/gzip").PUT(ofFile(tarGz)).build(), true);
  }

  /** A directory of the sandbox as a gzip-compressed tar, into {@code out}; answers the bytes copied. */
  public long downloadArchive(String sandboxId, String dir, OutputStream out) {
    return copy(sandbox(sandboxId) + "/files/archive", dir, out);
  }

  public long downloadArchive(String sandboxId, String dir, Path tarGz) {
    return toFile(tarGz, out -> downloadArchive(sandboxId, dir, out));
  }

  // ---- organization

  /** Costs grouped by {@code sandbox}, {@code backend} or {@code day}, within [start, end) when given. */
  public Costs costs(String groupBy, String start, String end) {
    return json(() -> t.request("/v1/costs", query("group_by", groupBy, "start", start, "end", end)).GET().build(),
        Costs.class);
  }

  public Policy policy() {
    return json(() -> t.request("/v1/policies/current", null).GET().build(), Policy.class);
  }

  /** Replaces the organization's guardrails (a null field is not enforced). */
  public Policy setPolicy(Policy policy) {
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("max_concurrent_sandboxes", policy.maxConcurrentSandboxes());
    body.put("hourly_spend_limit_usd", policy.hourlySpendLimitUsd());
    body.put("daily_spend_limit_usd", policy.dailySpendLimitUsd());
    body.put("allowed_backends", policy.allowedBackends());
    body.put("allowed_gpu_types", policy.allowedGpuTypes());
    body.put("max_sandbox_lifetime_secs", policy.maxSandboxLifetimeSecs());
    body.put("include_llm_cost", policy.includeLlmCost());
    body.put("default_backend", policy.defaultBackend());
    return json(() -> t.request("/v1/policies/current", null).header("Content-Type", "application/json")
        .PUT(Transport.json(body)).build(), Policy.class);
  }

  public List<ApiKey> apiKeys() {
    return Json.MAPPER.convertValue(Json.tree(t.send(() -> t.request("/v1/api-keys", null).GET().build(), true)
        .body()), new TypeReference<List<ApiKey>>() { });
  }

  /** Issues a key ({@code scopes} null: all of the caller's; {@code expiresAt} ISO-8601 or null). */
  public ApiKey createApiKey(String name, List<String> scopes, String expiresAt) {
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("name", name);
    body.put("scopes", scopes);
    body.put("expires_at", expiresAt);
    return json(() -> t.request("/v1/api-keys", null).header("Content-Type", "application/json")
        .POST(Transport.json(body)).build(), ApiKey.class);
  }

  public void revokeApiKey(String keyId) {
    t.send(() -> t.request("/v1/api-keys/" + Transport.segment(keyId), null).DELETE().build(), true);
  }

  // ---- plumbing

  private <T> T json(java.util.function.Supplier<HttpRequest> request, Class<T> type) {
    return Json.read(t.send(request, true).body(), type);
  }

  private <T> Page<T> page(java.util.function.Supplier<HttpRequest> request, TypeReference<List<T>> type) {
    HttpResponse<byte[]> r = t.send(request, true);
    List<T> items = Json.MAPPER.convertValue(Json.tree(r.body()), type);
    return new Page<>(items, r.headers().firstValue("X-Next-Cursor").filter(c -> !c.isEmpty()).orElse(null));
  }

  private long copy(String route, String path, OutputStream out) {
    HttpResponse<InputStream> r = t.send(() -> t.request(route, Map.of("path", path)).GET().build(),
        HttpResponse.BodyHandlers.ofInputStream(), true);
    try (InputStream in = r.body()) {
      return in.transferTo(out);
    } catch (IOException e) {
      throw new UncheckedIOException("download of " + path + " failed: " + e, e);
    }
  }

  private interface Download {
    long into(OutputStream out);
  }

  private static long toFile(Path local, Download download) {
    Path dir = local.toAbsolutePath().getParent();
    try {
      Path tmp = Files.createTempFile(dir, "." + local.getFileName(), ".part");
      try {
        long n;
        try (OutputStream out = Files.newOutputStream(tmp)) {
          n = download.into(out);
        }
        Files.move(tmp, local, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        return n;
      } finally {
        Files.deleteIfExists(tmp);
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static HttpRequest.BodyPublisher ofFile(Path local) {
    try {
      return HttpRequest.BodyPublishers.ofFile(local);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static Map<String, Object> query(Object... pairs) {
    Map<String, Object> q = new LinkedHashMap<>();
    for (int i = 0; i < pairs.length; i += 2) {
      q.put((String) pairs[i], pairs[i + 1]);
    }
    return q;
  }

  private static String sandbox(String sandboxId) {
    return "/v1/sandboxes/" + Transport.segment(sandboxId);
  }

  private static String executionPath(String sandboxId, String executionId) {
    return sandbox(sandboxId) + "/executions/" + Transport.segment(executionId);
  }

  private static String newKey() {
    return "idem_" + UUID.randomUUID().toString().replace("-", "");
  }
}
