package ai.bespokelabs.sandbox.gateway.http;

import ai.bespokelabs.sandbox.core.Times;
import ai.bespokelabs.sandbox.core.bus.RuntimeClient;
import ai.bespokelabs.sandbox.core.bus.Messages.MetricsRequest;
import ai.bespokelabs.sandbox.core.bus.Messages.SandboxMetrics;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.model.SandboxRecord;
import ai.bespokelabs.sandbox.core.repo.SandboxLogRepository.Event;
import ai.bespokelabs.sandbox.core.repo.SandboxLogRepository;
import ai.bespokelabs.sandbox.core.repo.SandboxRepository;
import ai.bespokelabs.sandbox.gateway.auth.Principal;
import ai.bespokelabs.sandbox.gateway.auth.Scopes;
import io.vertx.core.Future;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.OffsetDateTime;
import java.time.format.DateTimeParseException;
import java.util.Base64;
import java.util.List;

/**
 * A sandbox's logs (its lifecycle and its executions, from the database, so on every backend) and live
 * resource metrics (from its backend, where it can tell).
 */
public final class ObservabilityApi implements Endpoints {
  static final int DEFAULT_LOG_LIMIT = 100;
  static final int MAX_LOG_LIMIT = 1000;
  private final RuntimeClient runtime;
  private final SandboxRepository sandboxes;
  private final SandboxLogRepository logs;
  private final Clock clock;

  public ObservabilityApi(RuntimeClient runtime, SandboxRepository sandboxes, SandboxLogRepository logs,
      Clock clock) {
    this.runtime = runtime;
    this.sandboxes = sandboxes;
    this.logs = logs;
    this.clock = clock;
  }

  public void register(Api api) {
    api.authed(HttpMethod.GET, "/v1/sandboxes/{sandbox_id}/logs", Scopes.SANDBOXES_READ, this::logs);
    api.authed(HttpMethod.GET, "/v1/sandboxes/{sandbox_id}/metrics", Scopes.SANDBOXES_READ, this::metrics);
  }

  // ---- logs ------------------------------------------------------------------------------------------

  /**
   * Entries oldest first, after {@code since} (exclusive) and after the {@code cursor} of a previous page.
   * A full page that has more after it carries {@code X-Next-Cursor} (exact, also between entries that share
   * a timestamp) and {@code X-Next-Since} (the last entry's {@code ts}).
   */
  private Future<Reply> logs(RoutingContext ctx, Principal p) {
    int limit = limit(ctx.queryParams().get("limit"));
    OffsetDateTime since = since(ctx.queryParams().get("since"));
    Cursor after = Cursor.parse(ctx.queryParams().get("cursor"));
    return find(ctx, p).compose(sbx -> logs.page(sbx.id(), since, after == null ? null : after.at(),
        after == null ? null : after.seq(), limit + 1)).map(events -> {
          List<Event> page = events.size() > limit ? events.subList(0, limit) : events;
          JsonArray out = new JsonArray();
          page.forEach(e -> out.add(entry(e)));
          Reply reply = Reply.ok(out);
          if (events.size() > limit) {
            Event last = page.get(page.size() - 1);
            reply = reply.withHeader("X-Next-Cursor", new Cursor(last.at(), last.seq()).encode())
                .withHeader("X-Next-Since", Wire.ts(last.at()));
          }
          return reply;
        });
  }

  static int limit(String raw) {
    if (raw == null) {
      return DEFAULT_LOG_LIMIT;
    }
    int limit;
    try {
      limit = Integer.parseInt(raw);
    } catch (NumberFormatException e) {
      limit = -1;
    }
    if (limit < 1 || limit > MAX_LOG_LIMIT) {
      throw ApiException.invalid("limit must be between 1 and " + MAX_LOG_LIMIT);
    }
    return limit;
  }

  static OffsetDateTime since(String raw) {
    if (raw == null || raw.isEmpty()) {
      return null;
    }
    try {
      return OffsetDateTime.parse(raw);
    } catch (DateTimeParseException e) {
      throw ApiException.invalid("since must be an ISO-8601 timestamp with an offset, e.g. 2026-04-01T12:00:00Z");
    }
  }

  /** A position in a sandbox's log: the last entry's time and its event sequence number. */
  record Cursor(OffsetDateTime at, long seq) {
    String encode() {
      return Base64.getUrlEncoder().withoutPadding().encodeToString(
          (at.toString() + "|" + seq).getBytes(StandardCharsets.UTF_8));
    }

    static Cursor parse(String raw) {
      if (raw == null || raw.isEmpty()) {
        return null;
      }
      try {
        String[] parts = new String(Base64.getUrlDecoder().decode(raw), StandardCharsets.UTF_8).split("\\|", 2);
        return new Cursor(OffsetDateTime.parse(parts[0]), Long.parseLong(parts[1]));
      } catch (RuntimeException e) {
        throw ApiException.invalid("invalid pagination cursor");
      }
    }
  }

  /** One log entry: {@code {ts, source, message, exec_id}}. */
  static JsonObject entry(Event e) {
    boolean exec = e.type().startsWith("execution.");
    return new JsonObject().put("ts", Wire.ts(e.at())).put("source", exec ? "exec" : "system")
        .put("message", exec ? execMessage(e) : systemMessage(e)).put("exec_id", exec ? e.executionId() : null);
  }

  private static String execMessage(Event e) {
    JsonObject d = e.data();
    if (e.type().equals("execution.started")) {
      return "execution started";
    }
    Integer exit = d.getInteger("exit_code", e.exitCode());
    Long duration = d.getLong("duration_ms", e.durationMs());
    StringBuilder m = new StringBuilder("execution finished: status ").append(e.status());
    if (exit != null) {
      m.append(", exit code ").append(exit);
    }
    if (d.getString("code") != null) {
      m.append(", error ").append(d.getString("code"));
    }
    if (duration != null) {
      m.append(", ").append(duration).append(" ms");
    }
    return m.toString();
  }

  private static String systemMessage(Event e) {
    JsonObject d = e.data();
    return switch (e.type()) {
      case "sandbox.requested" -> "sandbox requested on backend " + d.getString("backend", "?");
      case "sandbox.running" -> "sandbox created and running";
      case "sandbox.retargeted" -> "creation on " + d.getString("from", "?") + " failed (provider error "
          + d.getString("code") + "); trying " + d.getString("to", "?");
      case "sandbox.failed" -> switch (String.valueOf(d.getString("op"))) {
        case "create" -> "sandbox creation failed: provider error " + d.getString("code");
        case "destroy" -> "sandbox destroy failed: provider error " + d.getString("code");
        case "reconcile" -> "sandbox failed: the provider no longer has it (" + d.getString("code") + ")";
        default -> "sandbox failed: provider error " + d.getString("code") + " during " + d.getString("op");
      };
      case "sandbox.deadline" -> "deadline set to " + d.getString("expires_at");
      case "sandbox.stopping" -> d.getString("claimed_by") != null ? "termination started by the supervisor"
          : "termination requested";
      case "sandbox.destroyed" -> "sandbox destroyed (reason: " + d.getString("reason", "unknown") + ")";
      case "sandbox.observed" -> "provider reports the sandbox " + e.status();
      default -> e.type() + (e.status() == null ? "" : " (" + e.status() + ")");
    };
  }

  // ---- metrics ---------------------------------------------------------------------------------------

  /** A live sample from the sandbox's backend; 409 unless running, 502 {@code feature_not_supported} where none. */
  private Future<Reply> metrics(RoutingContext ctx, Principal p) {
    return find(ctx, p).compose(sbx -> {
      if (!"running".equals(sbx.status())) {
        throw ApiException.conflict("sandbox is " + sbx.status());
      }
      MetricsRequest msg = new MetricsRequest(sbx.id(), sbx.providerResourceId(), sbx.config().memoryMb(),
          sbx.config().diskMb());
      return runtime.metrics(sbx.backend(), sbx.nodeId(), msg).map(m -> {
            return Reply.ok(new JsonObject().put("sandbox_id", sbx.id())
                .put("status", sbx.status()).put("cpu_percent", m.cpuPercent())
                .put("memory_used_mb", m.memoryUsedMb()).put("memory_limit_mb", m.memoryLimitMb())
                .put("disk_used_mb", m.diskUsedMb()).put("disk_limit_mb", m.diskLimitMb())
                .put("processes", m.processes()).put("sampled_at", Wire.ts(Times.now(clock))));
          });
    });
  }

  private Future<SandboxRecord> find(RoutingContext ctx, Principal p) {
    String id = Api.idParam(ctx, "sandbox_id", "sbx", "sandbox not found");
    return sandboxes.find(p.organizationId(), id)
        .map(o -> o.orElseThrow(() -> ApiException.notFound("sandbox not found")));
  }
}
