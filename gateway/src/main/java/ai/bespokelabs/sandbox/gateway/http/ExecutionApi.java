package ai.bespokelabs.sandbox.gateway.http;

import ai.bespokelabs.sandbox.core.Hmac;
import ai.bespokelabs.sandbox.core.Ids;
import ai.bespokelabs.sandbox.core.Times;
import ai.bespokelabs.sandbox.core.bus.Addresses;
import ai.bespokelabs.sandbox.core.bus.BusFailures;
import ai.bespokelabs.sandbox.core.bus.Messages.AttachExec;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecResult;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.SignalExec;
import ai.bespokelabs.sandbox.core.bus.Messages.StdinExec;
import ai.bespokelabs.sandbox.core.bus.Messages.StreamEvent;
import ai.bespokelabs.sandbox.core.config.GatewayConfig;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import ai.bespokelabs.sandbox.core.model.ExecutionRecord;
import ai.bespokelabs.sandbox.core.model.SandboxRecord;
import ai.bespokelabs.sandbox.core.repo.ExecutionRepository;
import ai.bespokelabs.sandbox.core.repo.SandboxRepository;
import ai.bespokelabs.sandbox.gateway.Backends;
import ai.bespokelabs.sandbox.gateway.ExecResponses;
import ai.bespokelabs.sandbox.gateway.ExecRoutes;
import ai.bespokelabs.sandbox.gateway.auth.Principal;
import ai.bespokelabs.sandbox.gateway.auth.Scopes;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.eventbus.Message;
import io.vertx.core.eventbus.ReplyException;
import io.vertx.core.eventbus.ReplyFailure;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.ServerWebSocket;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonObject;
import io.netty.handler.codec.http.websocketx.CorruptedWebSocketFrameException;
import io.vertx.ext.web.RoutingContext;
import java.time.Clock;
import java.util.Base64;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/**
 * Executions: the seed's blocking {@code execute}, and started executions that stream their output over
 * Server-Sent Events or WebSocket, take stdin and signals, and can be resumed by sequence number.
 */
public final class ExecutionApi implements Endpoints {
  static final long EXEC_GRACE_MS = 30_000L;
  static final long CONTROL_TIMEOUT_MS = 30_000L;
  static final long HEARTBEAT_NANOS = TimeUnit.SECONDS.toNanos(15);
  private static final Set<String> SIGNALS = Set.of("TERM", "KILL", "INT");

  private final Vertx vertx;
  private final GatewayConfig config;
  private final Backends backends;
  private final Hmac hmac;
  private final SandboxRepository sandboxes;
  private final ExecutionRepository executions;
  private final ExecRoutes routes;
  private final Clock clock;
  private final Set<SseChannel> openStreams = new HashSet<>();

  public ExecutionApi(Vertx vertx, GatewayConfig config, Backends backends, Hmac hmac, SandboxRepository sandboxes,
      ExecutionRepository executions, ExecRoutes routes, Clock clock) {
    this.vertx = vertx;
    this.config = config;
    this.backends = backends;
    this.hmac = hmac;
    this.sandboxes = sandboxes;
    this.executions = executions;
    this.routes = routes;
    this.clock = clock;
  }

  public void register(Api api) {
    String exec = "/v1/sandboxes/{sandbox_id}/executions/{execution_id}";
    api.authed(HttpMethod.POST, "/v1/sandboxes/{sandbox_id}/execute", Scopes.SANDBOXES_EXECUTE, this::execute);
    api.authed(HttpMethod.POST, "/v1/sandboxes/{sandbox_id}/executions", Scopes.SANDBOXES_EXECUTE, this::start);
    api.authed(HttpMethod.GET, "/v1/sandboxes/{sandbox_id}/executions/ws", Scopes.SANDBOXES_EXECUTE, this::wsStart);
    api.authed(HttpMethod.GET, exec, Scopes.SANDBOXES_READ, this::get);
    api.authed(HttpMethod.GET, exec + "/stream", Scopes.SANDBOXES_READ, this::sse);
    api.authed(HttpMethod.GET, exec + "/ws", Scopes.SANDBOXES_READ, this::wsAttach);
    api.authed(HttpMethod.POST, exec + "/stdin", Scopes.SANDBOXES_EXECUTE, this::stdin);
    api.authed(HttpMethod.POST, exec + "/signal", Scopes.SANDBOXES_EXECUTE, this::signal);
    vertx.setPeriodic(TimeUnit.NANOSECONDS.toMillis(HEARTBEAT_NANOS) / 3, t -> {
      for (SseChannel c : openStreams) {
        c.heartbeat(HEARTBEAT_NANOS);
      }
    });
  }

  // ---- launching ----------------------------------------------------------------------------------

  /** A launched (or replayed) execution. {@code existing} is set for a replay of its request id. */
  private record Launch(String executionId, String requestId, ExecutionRepository.Target target,
      ExecutionRecord existing, String adapterAddress, ExecSandbox message, java.time.OffsetDateTime createdAt) {}

  /** Inserts the running execution (or finds the replay) and builds the adapter message; sends nothing. */
  private Future<Launch> prepare(Principal p, String sandboxId, ExecRequest req, String requestId, boolean async,
      String subscriberAddress) {
    String executionId = Ids.newId("exe");
    String rid = requestId != null ? requestId : Ids.newId("req");
    java.time.OffsetDateTime now = Times.now(clock);
    return executions.start(p.organizationId(), sandboxId, executionId, rid, p.keyId(), now,
            backends.nodeBound(), backends.nodeId(), req.stdin(), fingerprint(req))
        .map(start -> {
          ExecutionRepository.Target t = start.target();
          if (start.existing().isPresent()) {
            ExecutionRecord existing = start.existing().get();
            return new Launch(existing.id(), rid, t, existing, null, null, existing.createdAt());
          }
          if (!"running".equals(t.status())) {
            throw ApiException.conflict("sandbox is " + t.status());
          }
          if (!start.started()) {
            throw ApiException.conflict("execution is already in progress");
          }
          if (!async) {
            routes.remember(p.organizationId(), t);
          }
          return launch(t, sandboxId, executionId, rid, req, async, subscriberAddress, now);
        });
  }

  /** What an {@code Idempotency-Key} is bound to: the keyed HMAC of the request, so env values stay unreadable. */
  private String fingerprint(ExecRequest req) {
    return hmac.hex(req.fingerprintInput());
  }

  /** The adapter message of a new execution and where it goes. */
  private Launch launch(ExecutionRepository.Target t, String sandboxId, String executionId, String requestId,
      ExecRequest req, boolean async, String subscriberAddress, java.time.OffsetDateTime now) {
    int timeout = req.timeoutSecs() != null ? req.timeoutSecs()
        : t.timeoutSecs() != null ? t.timeoutSecs() : config.execTimeoutSecs();
    ExecSandbox msg = new ExecSandbox(sandboxId, executionId, t.providerResourceId(), req.code(), req.language(),
        req.command(), req.args(), req.env(), req.cwd(), timeout, config.execOutputLimitBytes(), req.stdin(),
        async ? Addresses.recorder(backends.nodeId()) : null, subscriberAddress);
    String address = Addresses.adapter(t.backend(), backends.execNode(t.backend(), t.nodeId()));
    return new Launch(executionId, requestId, t, null, address, msg, now);
  }

  /** Sends a prepared asynchronous launch; a failure marks the execution failed and is rethrown. */
  private Future<Launch> send(Launch l) {
    return vertx.eventBus().request(l.adapterAddress(), l.message(),
            SandboxApi.action(Addresses.START, CONTROL_TIMEOUT_MS))
        .map(reply -> l)
        .recover(cause -> failed(l, cause));
  }

  private <T> Future<T> failed(Launch l, Throwable cause) {
    RuntimeException failure;
    if (cause instanceof ReplyException re && re.failureType() == ReplyFailure.NO_HANDLERS) {
      failure = ApiException.conflict("sandbox runtime is unavailable after a control-plane restart");
    } else {
      failure = BusFailures.decode(cause, l.target().backend(), "execute");
    }
    JsonObject stored = failure instanceof ProviderException pe ? pe.error().toJson()
        : new JsonObject().put("code", "conflict").put("message", ((ApiException) failure).detail());
    return executions.fail(l.executionId(), stored, 0, Times.now(clock)).compose(v -> Future.failedFuture(failure));
  }

  // ---- POST /execute ------------------------------------------------------------------------------

  private Future<Reply> execute(RoutingContext ctx, Principal p) {
    String sandboxId = Api.idParam(ctx, "sandbox_id", "sbx", "sandbox not found");
    ExecRequest req = ExecRequest.parse(Body.parse(Api.body(ctx)));
    String requestId = SandboxApi.idempotencyKey(ctx);
    String accept = ctx.request().getHeader("Accept");
    if (accept != null && accept.contains("text/event-stream")) {
      return executeStreaming(ctx, p, sandboxId, req, requestId);
    }
    ExecutionRepository.Target route = requestId == null ? routes.route(p.organizationId(), sandboxId) : null;
    if (route != null) {
      return executeEarly(p, sandboxId, req, route);
    }
    return prepare(p, sandboxId, req, requestId, false, null).compose(l -> {
      if (l.existing() != null) {
        return replay(l.existing());
      }
      return vertx.eventBus().<ExecResult>request(l.adapterAddress(), l.message(),
              SandboxApi.action(Addresses.EXEC, l.message().timeoutSecs() * 1000L + EXEC_GRACE_MS))
          .map(Message::body)
          .transform(ar -> ar.succeeded() ? completed(l, ar.result()) : this.<Reply>failed(l, ar.cause()));
    });
  }

  /**
   * {@code execute} without an idempotency key on a sandbox this node saw running moments ago: the program is
   * launched at once while its execution row is inserted, instead of after, which takes a database round
   * trip off every call. The insert still decides: when it finds the sandbox no longer running (or gone)
   * the launched program is killed and the caller gets that answer, as it would have before launching. (A
   * program that ends within a few milliseconds may have run by then, as one may that races a terminate.)
   * Without a key there is no earlier request the insert could find instead.
   */
  private Future<Reply> executeEarly(Principal p, String sandboxId, ExecRequest req, ExecutionRepository.Target t) {
    java.time.OffsetDateTime now = Times.now(clock);
    Launch l = launch(t, sandboxId, Ids.newId("exe"), Ids.newId("req"), req, false, null, now);
    Future<ExecResult> ran = vertx.eventBus().<ExecResult>request(l.adapterAddress(), l.message(),
            SandboxApi.action(Addresses.EXEC, l.message().timeoutSecs() * 1000L + EXEC_GRACE_MS))
        .map(Message::body);
    return executions.start(p.organizationId(), sandboxId, l.executionId(), l.requestId(), p.keyId(), now,
            backends.nodeBound(), backends.nodeId(), req.stdin(), fingerprint(req))
        .transform(started -> {
          if (started.succeeded() && started.result().started()) {
            return ran.transform(ar -> {
              if (ar.failed()) {
                routes.forget(sandboxId); // the route may be stale (e.g. the sandbox moved): look it up next time
              }
              return ar.succeeded() ? completed(l, ar.result()) : this.<Reply>failed(l, ar.cause());
            });
          }
          routes.forget(sandboxId);
          vertx.eventBus().send(l.adapterAddress(), new SignalExec(l.executionId(), "KILL"),
              new io.vertx.core.eventbus.DeliveryOptions().addHeader(Addresses.ACTION, Addresses.SIGNAL));
          if (started.failed()) {
            return Future.<Reply>failedFuture(started.cause());
          }
          return Future.<Reply>failedFuture(ApiException.conflict("sandbox is " + started.result().target().status()));
        });
  }

  private Future<Reply> completed(Launch l, ExecResult r) {
    JsonObject response = ExecResponses.of(l.requestId(), l.executionId(), r, l.target().hourlyRateUsd(),
        config.customerMarkup());
    return executions.complete(l.executionId(), r.status(), response, r.exitCode(), r.durationMs(), Times.now(clock))
        .map(v -> Reply.ok(response));
  }

  private static Future<Reply> replay(ExecutionRecord existing) {
    return switch (existing.status()) {
      case "completed", "timed_out", "cancelled" -> Future.succeededFuture(Reply.ok(existing.response()));
      case "running" -> Future.failedFuture(ApiException.conflict("execution is already in progress"));
      default -> Future.failedFuture(ApiException.conflict(String.valueOf(existing.error())));
    };
  }

  /** {@code execute} with {@code Accept: text/event-stream}: start and stream in one request. */
  private Future<Reply> executeStreaming(RoutingContext ctx, Principal p, String sandboxId, ExecRequest req,
      String requestId) {
    SseChannel channel = new SseChannel(ctx.response());
    StreamSubscriber sub = new StreamSubscriber(vertx, channel);
    return sub.ready()
        .compose(v -> prepare(p, sandboxId, req, requestId, true, sub.address))
        .compose(l -> {
          if (l.existing() != null) {
            sub.clientGone();
            return replay(l.existing());
          }
          sub.target(l.executionId(), l.adapterAddress());
          track(ctx, channel, sub);
          channel.open();
          channel.meta("started", new JsonObject().put("type", "started").put("execution_id", l.executionId())
              .put("request_id", l.requestId()));
          return send(l).map(Reply.HANDLED).recover(err -> {
            sub.failAndEnd(String.valueOf(ErrorMapper.map(err, 0).detail()));
            return Future.succeededFuture(Reply.HANDLED);
          });
        })
        .onFailure(e -> sub.clientGone());
  }

  // ---- started executions -------------------------------------------------------------------------

  private Future<Reply> start(RoutingContext ctx, Principal p) {
    String sandboxId = Api.idParam(ctx, "sandbox_id", "sbx", "sandbox not found");
    ExecRequest req = ExecRequest.parse(Body.parse(Api.body(ctx)));
    String requestId = SandboxApi.idempotencyKey(ctx);
    return prepare(p, sandboxId, req, requestId, true, null).compose(l -> l.existing() != null
        ? Future.succeededFuture(Reply.of(202, executionJson(l.existing())))
        : send(l).map(sent -> Reply.of(202, executionJson(new ExecutionRecord(l.executionId(), p.organizationId(),
            sandboxId, l.requestId(), "running", null, null, null, null, l.createdAt(), null, null, req.stdin())))));
  }

  private Future<Reply> get(RoutingContext ctx, Principal p) {
    return find(ctx, p).map(e -> Reply.ok(executionJson(e)));
  }

  private Future<ExecutionRecord> find(RoutingContext ctx, Principal p) {
    String sandboxId = Api.idParam(ctx, "sandbox_id", "sbx", "execution not found");
    String executionId = Api.idParam(ctx, "execution_id", "exe", "execution not found");
    return find(p, sandboxId, executionId);
  }

  private Future<ExecutionRecord> find(Principal p, String sandboxId, String executionId) {
    return executions.findById(p.organizationId(), sandboxId, executionId)
        .map(o -> o.orElseThrow(() -> ApiException.notFound("execution not found")));
  }

  /** The execution resource: status and, once finished, the stored result. */
  static JsonObject executionJson(ExecutionRecord e) {
    JsonObject j = new JsonObject()
        .put("id", e.id())
        .put("sandbox_id", e.sandboxId())
        .put("request_id", e.requestId())
        .put("status", e.status())
        .put("stdin", e.stdinOpen())
        .put("created_at", Wire.ts(e.createdAt()))
        .put("completed_at", Wire.ts(e.completedAt()));
    if (e.response() instanceof JsonObject response) {
      response.forEach(f -> {
        if (!j.containsKey(f.getKey()) && !"execution_id".equals(f.getKey())) {
          j.put(f.getKey(), f.getValue());
        }
      });
    }
    if (e.error() != null) {
      j.put("error", e.error());
    }
    return j;
  }

  /** The sandbox of an execution, for its backend (routing). */
  private Future<SandboxRecord> sandboxOf(Principal p, ExecutionRecord e) {
    return sandboxes.find(p.organizationId(), e.sandboxId())
        .map(o -> o.orElseThrow(() -> ApiException.notFound("execution not found")));
  }

  private String adapterOf(SandboxRecord sbx, ExecutionRecord e) {
    return Addresses.adapter(sbx.backend(), e.nodeId() != null ? e.nodeId() : sbx.nodeId());
  }

  // ---- watching -----------------------------------------------------------------------------------

  static long after(RoutingContext ctx) {
    String raw = ctx.request().getHeader("Last-Event-ID");
    if (raw == null) {
      raw = ctx.queryParams().get("after");
    }
    if (raw == null || raw.isBlank()) {
      return 0;
    }
    try {
      long n = Long.parseLong(raw.trim());
      if (n >= 0) {
        return n;
      }
    } catch (NumberFormatException ignored) {
      // rejected below
    }
    throw ApiException.invalid("Last-Event-ID and after must be a sequence number (0 or more)");
  }

  private Future<Reply> sse(RoutingContext ctx, Principal p) {
    long after = after(ctx);
    return find(ctx, p).compose(e -> sandboxOf(p, e).compose(sbx -> {
      SseChannel channel = new SseChannel(ctx.response());
      StreamSubscriber sub = new StreamSubscriber(vertx, channel);
      sub.target(e.id(), adapterOf(sbx, e));
      track(ctx, channel, sub);
      channel.open();
      attach(p, e, sbx, sub, channel, after);
      return Future.succeededFuture(Reply.HANDLED);
    }));
  }

  /** Heartbeats while the stream is open; a client that goes away detaches its subscription. */
  private void track(RoutingContext ctx, SseChannel channel, StreamSubscriber sub) {
    openStreams.add(channel);
    ctx.response().endHandler(v -> openStreams.remove(channel));
    ctx.response().closeHandler(v -> {
      openStreams.remove(channel);
      sub.clientGone();
    });
  }

  /**
   * Attaches {@code sub} to the live execution; when its node no longer holds it, serves the stored result:
   * a {@code gap} for the output that is no longer retained, then {@code exit}.
   */
  private void attach(Principal p, ExecutionRecord e, SandboxRecord sbx, StreamSubscriber sub, ClientChannel channel,
      long after) {
    sub.ready()
        .compose(v -> vertx.eventBus().request(adapterOf(sbx, e), new AttachExec(e.id(), sub.address, after),
            SandboxApi.action(Addresses.ATTACH, CONTROL_TIMEOUT_MS)))
        .onFailure(cause -> find(p, e.sandboxId(), e.id()).onComplete(ar -> {
          if (sub.finished()) {
            return;
          }
          ExecutionRecord now = ar.succeeded() ? ar.result() : e;
          if (now.response() instanceof JsonObject stored) {
            long lastSeq = stored.getLong("last_seq", 0L);
            if (after < lastSeq) {
              channel.write(new StreamEvent(StreamEvent.GAP, lastSeq, null, null, new JsonObject()
                  .put("from_seq", after + 1).put("to_seq", lastSeq).putNull("bytes")
                  .put("message", "live output is no longer retained; the exit event holds the stored result")));
            }
            sub.deliverFinal(new StreamEvent(StreamEvent.EXIT, lastSeq, null, null, stored.copy()));
          } else if ("failed".equals(now.status())) {
            sub.failAndEnd("execution failed: " + now.error());
          } else {
            sub.failAndEnd("execution is not attached to a running gateway node");
          }
        }));
  }

  // ---- WebSocket ----------------------------------------------------------------------------------

  private static boolean binaryMode(RoutingContext ctx) {
    String mode = ctx.queryParams().get("mode");
    if (mode == null || mode.equals("text")) {
      return false;
    }
    if (mode.equals("binary")) {
      return true;
    }
    throw ApiException.invalid("mode must be text or binary");
  }

  private Future<Reply> wsAttach(RoutingContext ctx, Principal p) {
    long after = after(ctx);
    boolean binary = binaryMode(ctx);
    return find(ctx, p).compose(e -> sandboxOf(p, e).compose(sbx -> ctx.request().toWebSocket().map(ws -> {
      WebSocketChannel channel = new WebSocketChannel(ws, binary);
      StreamSubscriber sub = new StreamSubscriber(vertx, channel);
      sub.target(e.id(), adapterOf(sbx, e));
      Session session = new Session(p, ws, channel);
      session.started(e.id(), adapterOf(sbx, e), sub);
      attach(p, e, sbx, sub, channel, after);
      return Reply.HANDLED;
    })));
  }

  private Future<Reply> wsStart(RoutingContext ctx, Principal p) {
    String sandboxId = Api.idParam(ctx, "sandbox_id", "sbx", "sandbox not found");
    boolean binary = binaryMode(ctx);
    return ctx.request().toWebSocket().map(ws -> {
      WebSocketChannel channel = new WebSocketChannel(ws, binary);
      Session session = new Session(p, ws, channel);
      session.onStart = body -> {
        StreamSubscriber sub = new StreamSubscriber(vertx, channel);
        ExecRequest req = ExecRequest.parse(body);
        session.starting = true;
        sub.ready()
            .compose(v -> prepare(p, sandboxId, req, null, true, sub.address))
            .compose(l -> {
              // announced before the program starts, so no output can precede it
              sub.target(l.executionId(), l.adapterAddress());
              session.started(l.executionId(), l.adapterAddress(), sub);
              ws.writeTextMessage(new JsonObject().put("type", "started").put("execution_id", l.executionId())
                  .put("request_id", l.requestId()).encode());
              return send(l);
            })
            .onFailure(err -> {
              session.starting = false;
              sub.clientGone();
              channel.error(ErrorMapper.map(err, 0).detail().toString());
            });
      };
      return Reply.HANDLED;
    });
  }

  /**
   * One WebSocket: before the execution is known, only {@code start} (on the start route); afterwards
   * {@code stdin}, {@code stdin_eof} and {@code signal} (which need {@code sandboxes:execute}). A malformed
   * frame gets an error frame and the socket stays open.
   */
  private final class Session {
    final Principal principal;
    final ServerWebSocket ws;
    final ClientChannel channel;
    java.util.function.Consumer<Body> onStart;
    boolean starting;
    String executionId;
    String adapterAddress;
    StreamSubscriber sub;

    Session(Principal principal, ServerWebSocket ws, ClientChannel channel) {
      this.principal = principal;
      this.ws = ws;
      this.channel = channel;
      ws.textMessageHandler(this::text);
      ws.binaryMessageHandler(this::binary);
      ws.closeHandler(v -> {
        if (sub != null) {
          sub.clientGone();
        }
      });
      ws.exceptionHandler(t -> {
        if (sub != null) {
          sub.clientGone();
        }
        // an oversized or corrupt frame leaves the decoder unusable: close with the status it calls for
        short status = closeStatus(t);
        if (!ws.isClosed()) {
          ws.close(status, status == 1009 ? "frame too large" : "protocol error");
        }
      });
    }

    void started(String id, String address, StreamSubscriber subscriber) {
      this.executionId = id;
      this.adapterAddress = address;
      this.sub = subscriber;
    }

    private void text(String text) {
      JsonObject frame;
      try {
        frame = new JsonObject(text);
      } catch (DecodeException | ClassCastException e) {
        channel.error("frames must be JSON objects");
        return;
      }
      String type = frame.getValue("type") instanceof String t ? t : "";
      try {
        switch (type) {
          case "start" -> {
            if (onStart == null || starting || executionId != null) {
              channel.error("this socket is already attached to an execution");
              return;
            }
            frame.remove("type");
            onStart.accept(Body.parse(frame.toBuffer()));
          }
          case "stdin" -> {
            byte[] data = frame.getValue("data") instanceof String d ? d.getBytes(java.nio.charset.StandardCharsets.UTF_8)
                : frame.getValue("data_b64") instanceof String b ? Base64.getDecoder().decode(b) : null;
            if (data == null) {
              channel.error("stdin frames need data or data_b64");
              return;
            }
            control(Addresses.STDIN, new StdinExec(executionId, data, false));
          }
          case "stdin_eof" -> control(Addresses.STDIN, new StdinExec(executionId, new byte[0], true));
          case "signal" -> {
            String sig = frame.getValue("signal") instanceof String v ? v : "";
            if (!SIGNALS.contains(sig)) {
              channel.error("signal must be one of TERM, KILL, INT");
              return;
            }
            control(Addresses.SIGNAL, new SignalExec(executionId, sig));
          }
          default -> channel.error("unknown frame type; expected start, stdin, stdin_eof or signal");
        }
      } catch (ApiException e) {
        channel.error(e.detail() instanceof String m ? m : String.valueOf(e.detail()));
      } catch (IllegalArgumentException e) {
        channel.error("data_b64 is not valid base64");
      }
    }

    private void binary(Buffer data) {
      control(Addresses.STDIN, new StdinExec(executionId, data.getBytes(), false));
    }

    private void control(String action, Object message) {
      if (executionId == null) {
        channel.error("no execution is attached yet");
        return;
      }
      if (!principal.has(Scopes.SANDBOXES_EXECUTE)) {
        channel.error("API key requires scope: " + Scopes.SANDBOXES_EXECUTE);
        return;
      }
      vertx.eventBus().request(adapterAddress, message, SandboxApi.action(action, CONTROL_TIMEOUT_MS))
          .onFailure(t -> channel.error(controlFailure(t)));
    }
  }

  /** The close status a failed frame calls for: 1009 for one that is too large, else its own or 1002. */
  static short closeStatus(Throwable t) {
    for (Throwable c = t; c != null; c = c.getCause()) {
      if (c instanceof CorruptedWebSocketFrameException corrupted) {
        return (short) corrupted.closeStatus().code();
      }
      if (c instanceof io.netty.handler.codec.TooLongFrameException
          || String.valueOf(c.getMessage()).toLowerCase(java.util.Locale.ROOT).contains("max")) {
        return 1009;
      }
    }
    return 1002;
  }

  private static String controlFailure(Throwable t) {
    RuntimeException e = BusFailures.decode(t, "unknown", "control");
    if (e instanceof ApiException api) {
      return api.status() == 404 ? "execution has finished" : String.valueOf(api.detail());
    }
    return "the execution did not accept the request";
  }

  // ---- stdin and signals over REST ----------------------------------------------------------------

  private Future<Reply> stdin(RoutingContext ctx, Principal p) {
    boolean eof = "true".equalsIgnoreCase(ctx.queryParams().get("eof"));
    Buffer body = Api.body(ctx);
    byte[] data = body == null ? new byte[0] : body.getBytes();
    return controlRest(ctx, p, Addresses.STDIN, e -> new StdinExec(e.id(), data, eof), true);
  }

  private Future<Reply> signal(RoutingContext ctx, Principal p) {
    Body body = Body.parse(Api.body(ctx));
    String sig = body.string("signal", true, 1, 8);
    body.check();
    if (!SIGNALS.contains(sig)) {
      throw ApiException.invalid("signal must be one of TERM, KILL, INT");
    }
    return controlRest(ctx, p, Addresses.SIGNAL, e -> new SignalExec(e.id(), sig), false);
  }

  private Future<Reply> controlRest(RoutingContext ctx, Principal p, String action,
      java.util.function.Function<ExecutionRecord, Object> message, boolean needsStdin) {
    return find(ctx, p).compose(e -> {
      if (!"running".equals(e.status())) {
        throw ApiException.conflict("execution has finished");
      }
      if (needsStdin && !e.stdinOpen()) {
        throw ApiException.conflict("stdin is not open for this execution");
      }
      return sandboxOf(p, e).compose(sbx -> vertx.eventBus()
          .request(adapterOf(sbx, e), message.apply(e), SandboxApi.action(action, CONTROL_TIMEOUT_MS))
          .recover(t -> {
            RuntimeException failure = BusFailures.decode(t, sbx.backend(), action);
            if (failure instanceof ApiException api && api.status() == 404
                || t instanceof ReplyException re && re.failureType() == ReplyFailure.NO_HANDLERS) {
              return Future.failedFuture(ApiException.conflict("execution has finished"));
            }
            return Future.failedFuture(failure);
          })
          .map(v -> Reply.noContent()));
    });
  }
}
