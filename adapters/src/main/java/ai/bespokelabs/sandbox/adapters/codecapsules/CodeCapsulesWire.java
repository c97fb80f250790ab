package ai.bespokelabs.sandbox.adapters.codecapsules;

import io.vertx.core.json.JsonObject;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Set;

/**
 * Every assumption about CodeCapsules' wire format, in one place. CodeCapsules publishes only its SDK surface
 * ({@code codecapsules-sandbox}): the operations, their parameters and result fields, and the limits. The REST
 * routes, the JSON field names on the wire, the error body and the stream framing below are chosen as that
 * surface implies; when the real API differs, this class (and the simulator that implements it) is what
 * changes.
 *
 * <ul>
 *   <li>Auth: {@code Authorization: Bearer <CODECAPSULES_API_KEY>} on every request.
 *   <li>{@code POST /sandboxes} {@code {flavor, memory, cpu, ttl, metadata}} → 201 sandbox
 *       {@code {id, flavor, status, cpu, memory, createdAt, expiresAt, metadata}}; it answers once running.
 *   <li>{@code GET /sandboxes/{id}} → 200 sandbox; {@code POST /sandboxes/{id}/stop} → 200 sandbox (unused: the gateway has no
 *       stop, and a stopped sandbox still counts against the quota);
 *       {@code DELETE /sandboxes/{id}} → 204.
 *   <li>{@code POST /sandboxes/{id}/exec} {@code {command, timeout, env?, stdin?}} → 200
 *       {@code {execId, command, stdout, stderr, exitCode, durationMs, startedAt, completedAt}}; a command
 *       that outlives its timeout → 408 with error code {@code exec_timeout}.
 *   <li>{@code POST /sandboxes/{id}/exec/stream} {@code {command, timeout, env?}} → 200
 *       {@code application/x-ndjson}: one JSON object a line, {@code {type: stdout|stderr, data}} chunks
 *       interleaved as produced, then {@code {type: exit, exitCode, durationMs, timedOut}}. Closing the
 *       connection ends the command.
 *   <li>{@code PUT /sandboxes/{id}/files?path=} raw bytes → 200 {@code {path, sizeBytes, createdAt}};
 *       {@code GET /sandboxes/{id}/files?path=} → 200 raw bytes (400 {@code is_directory} for a directory).
 *       Parents are created by an upload. Listing and deleting have no route: they run {@code find}/{@code rm}
 *       through exec.
 *   <li>{@code GET /sandboxes/{id}/logs?since=&limit=} → 200 {@code [{ts, source, message, execId?}]} (unused:
 *       the gateway keeps its own sandbox log).
 *   <li>{@code GET /sandboxes/{id}/metrics} → 200 {@code {cpuPercent, memoryUsedMb, memoryLimitMb, diskUsedMb,
 *       diskLimitMb, execCount, uptimeSeconds}}.
 *   <li>Errors: {@code {"error": {"code", "message", "retryAfterMs"?}}} with codes {@code unauthorized},
 *       {@code not_found}, {@code not_ready}, {@code exec_timeout}, {@code rate_limited},
 *       {@code quota_exceeded}, {@code invalid_request}; 429 may carry {@code Retry-After} (seconds).
 *   <li>There is no list operation: sandboxes cannot be found by their metadata.
 * </ul>
 */
final class CodeCapsulesWire {
  private CodeCapsulesWire() {}

  // ---- routes ----------------------------------------------------------------------------------------------

  static final String SANDBOXES = "/sandboxes";

  static String sandbox(String id) {
    return SANDBOXES + "/" + URLEncoder.encode(id, StandardCharsets.UTF_8).replace("+", "%20");
  }

  static String exec(String id) {
    return sandbox(id) + "/exec";
  }

  static String execStream(String id) {
    return sandbox(id) + "/exec/stream";
  }

  static String files(String id, String path) {
    return sandbox(id) + "/files?path=" + URLEncoder.encode(path, StandardCharsets.UTF_8).replace("+", "%20");
  }

  static String metrics(String id) {
    return sandbox(id) + "/metrics";
  }

  /** Health: a lookup of a sandbox id that cannot exist; 404 proves the key works. */
  static final String HEALTH_PROBE_ID = "sb_health_probe";

  // ---- auth --------------------------------------------------------------------------------------------------

  static final String AUTH_HEADER = "Authorization";

  static String bearer(String key) {
    return "Bearer " + key;
  }

  // ---- documented limits -------------------------------------------------------------------------------------

  static final Set<String> FLAVORS = Set.of("python-3.12", "node-20", "browser", "full");
  static final int MAX_MEMORY_MB = 8192;
  static final int MAX_CPU = 4;
  static final int MAX_TTL_MINUTES = 480;
  static final int MAX_EXEC_TIMEOUT_SECS = 300;

  // ---- create ------------------------------------------------------------------------------------------------

  static JsonObject createBody(String flavor, Integer memoryMb, Integer cpu, int ttlMinutes,
      Map<String, String> metadata) {
    JsonObject body = new JsonObject().put("flavor", flavor).put("ttl", ttlMinutes)
        .put("metadata", new JsonObject(new java.util.LinkedHashMap<>(metadata)));
    if (memoryMb != null) {
      body.put("memory", memoryMb);
    }
    if (cpu != null) {
      body.put("cpu", cpu);
    }
    return body;
  }

  static String sandboxId(JsonObject sandbox) {
    return sandbox.getValue("id") instanceof String s && !s.isBlank() ? s : null;
  }

  static String status(JsonObject sandbox) {
    return sandbox.getValue("status") instanceof String s ? s : null;
  }

  static JsonObject metadata(JsonObject sandbox) {
    return sandbox.getValue("metadata") instanceof JsonObject m ? m : new JsonObject();
  }

  /** Statuses of a sandbox that is gone for good (or going): executing in it is pointless. */
  static final Set<String> ENDED = Set.of("stopping", "stopped", "error");

  // ---- exec --------------------------------------------------------------------------------------------------

  static JsonObject execBody(String command, int timeoutSecs, Map<String, String> env, String stdin) {
    JsonObject body = new JsonObject().put("command", command).put("timeout", timeoutSecs);
    if (!env.isEmpty()) {
      body.put("env", new JsonObject(new java.util.LinkedHashMap<>(env)));
    }
    if (stdin != null) {
      body.put("stdin", stdin);
    }
    return body;
  }

  /** The result of a one-shot exec: stdout, stderr, exit code and duration. */
  record ExecResult(String stdout, String stderr, int exitCode, long durationMs) {
    static ExecResult of(JsonObject j) {
      if (!(j.getValue("exitCode") instanceof Number code)) {
        return null;
      }
      return new ExecResult(j.getValue("stdout") instanceof String s ? s : "",
          j.getValue("stderr") instanceof String s ? s : "", code.intValue(),
          j.getValue("durationMs") instanceof Number d ? d.longValue() : 0);
    }
  }

  static final String STREAM_DELIMITER = "\n";

  /** One line of an exec stream. {@code type} is stdout, stderr or exit. */
  record Frame(String type, String data, Integer exitCode, long durationMs, boolean timedOut) {
    static final String STDOUT = "stdout";
    static final String STDERR = "stderr";
    static final String EXIT = "exit";

    /** The frame, or null when the line is not one. */
    static Frame parse(JsonObject j) {
      if (!(j.getValue("type") instanceof String type)) {
        return null;
      }
      return switch (type) {
        case STDOUT, STDERR -> j.getValue("data") instanceof String d ? new Frame(type, d, null, 0, false) : null;
        case EXIT -> new Frame(type, null, j.getValue("exitCode") instanceof Number n ? n.intValue() : null,
            j.getValue("durationMs") instanceof Number d ? d.longValue() : 0,
            Boolean.TRUE.equals(j.getValue("timedOut")));
        default -> null;
      };
    }
  }

  // ---- files -------------------------------------------------------------------------------------------------

  static final String OCTETS = "application/octet-stream";
  /** The download of a directory: 400 with this error code. */
  static final String IS_DIRECTORY = "is_directory";

  /** The answer to an upload: {@code {path, sizeBytes, createdAt}}. */
  record FileInfo(String path, long sizeBytes, java.time.Instant createdAt) {
    static FileInfo of(JsonObject j, String asked) {
      String path = j.getValue("path") instanceof String p ? p : asked;
      long size = j.getValue("sizeBytes") instanceof Number n ? n.longValue() : -1;
      java.time.Instant at = null;
      if (j.getValue("createdAt") instanceof String t) {
        try {
          at = java.time.Instant.parse(t);
        } catch (java.time.format.DateTimeParseException ignored) {
          // unknown
        }
      }
      return new FileInfo(path, size, at);
    }
  }

  // ---- metrics -----------------------------------------------------------------------------------------------

  static final String CPU_PERCENT = "cpuPercent";
  static final String MEMORY_USED_MB = "memoryUsedMb";
  static final String MEMORY_LIMIT_MB = "memoryLimitMb";
  static final String DISK_USED_MB = "diskUsedMb";
  static final String DISK_LIMIT_MB = "diskLimitMb";

  // ---- errors ------------------------------------------------------------------------------------------------

  static final String RETRY_AFTER_HEADER = "Retry-After";
  static final String QUOTA_EXCEEDED = "quota_exceeded";
  static final String EXEC_TIMEOUT = "exec_timeout";
  static final String NOT_READY = "not_ready";
  /** The error codes assumed; only these are ever passed on (as {@code provider_code}). */
  static final Set<String> ERROR_CODES = Set.of("unauthorized", "not_found", NOT_READY, EXEC_TIMEOUT,
      "rate_limited", QUOTA_EXCEEDED, "invalid_request", IS_DIRECTORY);

  /** The {@code error.code} of an error body, or null. Only this code is read: messages may hold anything. */
  static String errorCode(io.vertx.core.buffer.Buffer body) {
    try {
      JsonObject j = body == null || body.length() == 0 ? null : new JsonObject(body);
      return j != null && j.getValue("error") instanceof JsonObject e && e.getValue("code") instanceof String c
          ? c : null;
    } catch (RuntimeException notJson) {
      return null;
    }
  }

  /** The {@code error.retryAfterMs} of an error body, or null. */
  static Long retryAfterMs(io.vertx.core.buffer.Buffer body) {
    try {
      JsonObject j = body == null || body.length() == 0 ? null : new JsonObject(body);
      return j != null && j.getValue("error") instanceof JsonObject e && e.getValue("retryAfterMs") instanceof Number n
          ? n.longValue() : null;
    } catch (RuntimeException notJson) {
      return null;
    }
  }
}
