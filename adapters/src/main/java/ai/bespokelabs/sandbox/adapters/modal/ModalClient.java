package ai.bespokelabs.sandbox.adapters.modal;

import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError.Outcome;
import com.google.protobuf.Message;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpVersion;
import io.vertx.core.net.SocketAddress;
import io.vertx.grpc.client.GrpcClient;
import io.vertx.grpc.client.GrpcClientOptions;
import io.vertx.grpc.client.GrpcClientRequest;
import io.vertx.grpc.client.GrpcClientResponse;
import io.vertx.grpc.common.GrpcMessageDecoder;
import io.vertx.grpc.common.GrpcMessageEncoder;
import io.vertx.grpc.common.GrpcStatus;
import io.vertx.grpc.common.ServiceMethod;
import io.vertx.grpc.common.ServiceName;
import java.net.URI;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.function.Predicate;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import modal.client.Api;
import modal.task_command_router.TaskCommandRouterOuterClass.TaskExecStdioReadRequest;
import modal.task_command_router.TaskCommandRouterOuterClass.TaskExecStdioReadResponse;

/**
 * gRPC to Modal with the Vert.x gRPC client: the API server ({@code modal.client.ModalClient}, authenticated by
 * the token headers) and each task's command router ({@code modal.task_command_router.TaskCommandRouter},
 * authenticated by the JWT {@code TaskGetCommandRouterAccess} hands out). Messages are the classes generated at
 * build time from Modal's protos. {@code https://} addresses use TLS (ALPN h2), {@code http://} plaintext HTTP/2.
 */
final class ModalClient {
  static final ServiceName API = ServiceName.create("modal.client", "ModalClient");
  static final ServiceName ROUTER = ServiceName.create("modal.task_command_router", "TaskCommandRouter");
  /** The client type sent as {@code x-modal-client-type}: the ClientType number of Modal's JS library. */
  static final String CLIENT_TYPE = "8";
  /** The client version sent as {@code x-modal-client-version} (a version of that library). */
  static final String CLIENT_VERSION = "0.5.0";

  /** The largest message taken: a file read's answer ({@link ModalFiles#MAX_READ}) with room to spare. */
  static final long MAX_MESSAGE = 16L << 20;

  /** A server: where, and whether over TLS. */
  record Endpoint(SocketAddress address, boolean tls) {
    static Endpoint of(String url) {
      URI uri = URI.create(url);
      boolean tls = "https".equals(uri.getScheme());
      int port = uri.getPort() > 0 ? uri.getPort() : tls ? 443 : 80;
      return new Endpoint(SocketAddress.inetSocketAddress(port, uri.getHost()), tls);
    }
  }

  /** A task's command router: its address and the bearer token for it. */
  record Router(String taskId, Endpoint endpoint, String jwt) {
    /** Never prints the token. */
    @Override
    public String toString() {
      return "Router[taskId=" + taskId + ", endpoint=" + endpoint + "]";
    }
  }

  private final Vertx vertx;
  private final ModalSettings settings;
  private final Endpoint api;
  private final GrpcClient plain;
  private final GrpcClient tls;
  private final ModalAuth auth;
  private final Map<String, String> apps = new HashMap<>();
  /** Routers by sandbox id; touched only on the adapter's context. */
  private final Map<String, Router> routers = new HashMap<>();

  ModalClient(Vertx vertx, ModalSettings settings) {
    this.vertx = vertx;
    this.settings = settings;
    this.api = Endpoint.of(settings.serverUrl());
    this.auth = new ModalAuth(this::fetchAuthToken);
    // a call's timeout is its deadline here too, not only the grpc-timeout header a server may ignore
    this.plain = GrpcClient.client(vertx, new GrpcClientOptions().setMaxMessageSize(MAX_MESSAGE)
            .setScheduleDeadlineAutomatically(true),
        new HttpClientOptions().setProtocolVersion(HttpVersion.HTTP_2).setHttp2ClearTextUpgrade(false));
    this.tls = GrpcClient.client(vertx, new GrpcClientOptions().setMaxMessageSize(MAX_MESSAGE)
            .setScheduleDeadlineAutomatically(true),
        new HttpClientOptions().setProtocolVersion(HttpVersion.HTTP_2).setSsl(true).setUseAlpn(true));
  }

  Vertx vertx() {
    return vertx;
  }

  ModalSettings settings() {
    return settings;
  }

  static <Req extends Message, Resp extends Message> ServiceMethod<Resp, Req> method(ServiceName service,
      String name, Resp prototype) {
    return ServiceMethod.client(service, name, GrpcMessageEncoder.encoder(), GrpcMessageDecoder.decoder(prototype));
  }

  /**
   * A unary call to the API server with the token headers and the auth token; failures are mapped onto the
   * contract.
   */
  <Req extends Message, Resp extends Message> Future<Resp> call(String name, Req request, Resp prototype, String op) {
    ServiceMethod<Resp, Req> m = method(API, name, prototype);
    return authed(token -> unary(api, m, request, null, token, settings.requestTimeout().toMillis()), op);
  }

  /** A unary call to a command router with its bearer token. */
  <Req extends Message, Resp extends Message> Future<Resp> route(Router router, String name, Req request,
      Resp prototype, long timeoutMs, String op) {
    return unary(router.endpoint(), method(ROUTER, name, prototype), request, router.jwt(), null, timeoutMs)
        .recover(t -> Future.failedFuture(ModalErrors.map(t, op)));
  }

  /** The server refused the auth token as expired (only the status message tells; it is not kept). */
  static final class TokenExpired extends RuntimeException {
    TokenExpired() {
      super("auth token expired", null, false, false);
    }
  }

  static boolean expired(GrpcStatus status, String message) {
    return status == GrpcStatus.UNAUTHENTICATED && message != null
        && message.toLowerCase(java.util.Locale.ROOT).contains("expired");
  }

  /**
   * Sends with the current auth token ({@link ModalAuth}); when the server refuses it as expired, once more with
   * a fresh one. A second refusal, like any failure, is mapped onto the contract.
   */
  private <T> Future<T> authed(Function<String, Future<T>> send, String op) {
    return auth.token().compose(t -> send.apply(t).recover(e -> e instanceof TokenExpired
            ? auth.renew(t).compose(send) : Future.failedFuture(e)))
        .recover(e -> Future.failedFuture(e instanceof TokenExpired
            ? ModalErrors.status(GrpcStatus.UNAUTHENTICATED, op) : ModalErrors.map(e, op)));
  }

  /** {@code AuthTokenGet}, with the token id and secret alone. */
  private Future<String> fetchAuthToken() {
    return unary(api, method(API, "AuthTokenGet", Api.AuthTokenGetResponse.getDefaultInstance()),
        Api.AuthTokenGetRequest.getDefaultInstance(), null, null, settings.requestTimeout().toMillis())
        .compose(r -> r.getToken().isBlank()
            ? Future.failedFuture(ModalErrors.of(ErrorCode.AUTHENTICATION, "auth", false, Outcome.FAILED))
            : Future.succeededFuture(r.getToken()));
  }

  /** One unary call, unmapped; a refusal of {@code authToken} as expired fails with {@link TokenExpired}. */
  private <Req extends Message, Resp extends Message> Future<Resp> unary(Endpoint to, ServiceMethod<Resp, Req> m,
      Req request, String jwt, String authToken, long timeoutMs) {
    return grpc(to).request(to.address(), m).compose(req -> {
      authorize(req, jwt, authToken);
      req.timeout(timeoutMs, TimeUnit.MILLISECONDS);
      return req.send(request).compose(resp -> resp.last().recover(e -> Future.failedFuture(
          authToken != null && expired(resp.status(), resp.statusMessage()) ? new TokenExpired()
              : ModalErrors.Pushback.of(e, resp))))
          .recover(e -> Future.failedFuture(pastDeadline(req, e)));
    });
  }

  /**
   * A call cancelled at its deadline fails as a timeout: the stream reset it ends with does not say why, and
   * would read as a lost connection.
   */
  private static Throwable pastDeadline(GrpcClientRequest<?, ?> req, Throwable e) {
    io.vertx.core.Timer deadline = req.deadline();
    if (deadline == null || !deadline.succeeded() || e instanceof TokenExpired) {
      return e;
    }
    TimeoutException t = new TimeoutException("no answer within the call's deadline");
    t.initCause(e);
    return t;
  }

  /**
   * A server-streaming call to the API server with the token headers and the auth token, its messages collected
   * until {@code last} says one ends the answer (the call is then cancelled) or the stream ends.
   */
  <Req extends Message, Resp extends Message> Future<List<Resp>> collect(String name, Req request, Resp prototype,
      Predicate<Resp> last, long timeoutMs, String op) {
    ServiceMethod<Resp, Req> m = method(API, name, prototype);
    return authed(token -> grpc(api).request(api.address(), m).compose(req -> {
      authorize(req, null, token);
      req.timeout(timeoutMs, TimeUnit.MILLISECONDS);
      return req.send(request).compose(resp -> {
        List<Resp> out = new ArrayList<>();
        Promise<List<Resp>> done = Promise.promise();
        resp.handler(msg -> {
          out.add(msg);
          if (last.test(msg) && done.tryComplete(out)) {
            req.cancel();
          }
        });
        resp.end().onComplete(ar -> {
          if (ar.succeeded()) {
            done.tryComplete(out);
          } else {
            done.tryFail(expired(resp.status(), resp.statusMessage()) ? new TokenExpired()
                : ModalErrors.Pushback.of(ar.cause(), resp));
          }
        });
        return done.future();
      }).recover(e -> Future.failedFuture(pastDeadline(req, e)));
    }), op);
  }

  /**
   * A server-streaming call to the API server with the token headers and the auth token, each message handed to
   * {@code handler} as it arrives (nothing is kept) until the handler says it ends the answer (the call is then
   * cancelled): true then, false when the server ended the stream first. The call's deadline ({@code timeoutMs})
   * is enforced here, so a server that stops answering fails the call as a timeout.
   */
  <Req extends Message, Resp extends Message> Future<Boolean> stream(String name, Req request, Resp prototype,
      Predicate<Resp> handler, long timeoutMs, String op) {
    ServiceMethod<Resp, Req> m = method(API, name, prototype);
    return authed(token -> grpc(api).request(api.address(), m).compose(req -> {
      authorize(req, null, token);
      req.timeout(timeoutMs, TimeUnit.MILLISECONDS);
      return req.send(request).compose(resp -> {
        Promise<Boolean> done = Promise.promise();
        resp.handler(msg -> {
          if (!done.future().isComplete() && handler.test(msg) && done.tryComplete(true)) {
            req.cancel();
          }
        });
        resp.end().onComplete(ar -> {
          if (ar.succeeded()) {
            done.tryComplete(false);
          } else {
            done.tryFail(expired(resp.status(), resp.statusMessage()) ? new TokenExpired()
                : ModalErrors.Pushback.of(ar.cause(), resp));
          }
        });
        return done.future();
      }).recover(e -> Future.failedFuture(pastDeadline(req, e)));
    }), op);
  }

  /** An open {@code TaskExecStdioRead}: the call (to cancel it) and its paused response. */
  record Stdio(GrpcClientRequest<TaskExecStdioReadRequest, TaskExecStdioReadResponse> request,
      GrpcClientResponse<TaskExecStdioReadRequest, TaskExecStdioReadResponse> response) {}

  /** Opens {@code TaskExecStdioRead} (server streaming); the response is handed over paused. */
  Future<Stdio> read(Router router, TaskExecStdioReadRequest request) {
    ServiceMethod<TaskExecStdioReadResponse, TaskExecStdioReadRequest> m =
        method(ROUTER, "TaskExecStdioRead", TaskExecStdioReadResponse.getDefaultInstance());
    Endpoint to = router.endpoint();
    return grpc(to).request(to.address(), m).compose(req -> {
      authorize(req, router.jwt(), null);
      return req.send(request).map(resp -> {
        resp.pause();
        return new Stdio(req, resp);
      });
    });
  }

  private GrpcClient grpc(Endpoint to) {
    return to.tls() ? tls : plain;
  }

  private void authorize(GrpcClientRequest<?, ?> req, String jwt, String authToken) {
    if (jwt != null) {
      req.headers().set("authorization", "Bearer " + jwt);
      return;
    }
    if (authToken != null) {
      req.headers().set("x-modal-auth-token", authToken);
    }
    req.headers().set("x-modal-token-id", settings.tokenId().reveal())
        .set("x-modal-token-secret", settings.tokenSecret().reveal())
        .set("x-modal-client-type", CLIENT_TYPE)
        .set("x-modal-client-version", CLIENT_VERSION);
  }

  /** The app's id ({@code AppGetOrCreate}, create if missing), remembered per name. */
  Future<String> app(String name, String op) {
    String known = apps.get(name);
    if (known != null) {
      return Future.succeededFuture(known);
    }
    Api.AppGetOrCreateRequest.Builder b = Api.AppGetOrCreateRequest.newBuilder().setAppName(name)
        .setObjectCreationType(Api.ObjectCreationType.OBJECT_CREATION_TYPE_CREATE_IF_MISSING);
    if (settings.environment() != null) {
      b.setEnvironmentName(settings.environment());
    }
    return call("AppGetOrCreate", b.build(), Api.AppGetOrCreateResponse.getDefaultInstance(), op).map(r -> {
      apps.put(name, r.getAppId());
      return r.getAppId();
    });
  }

  /** The sandbox's task and the command router serving it, remembered per sandbox. */
  Future<Router> router(String sandboxId, String op) {
    Router known = routers.get(sandboxId);
    if (known != null) {
      return Future.succeededFuture(known);
    }
    return lookUpRouter(sandboxId, op).onSuccess(r -> routers.put(sandboxId, r));
  }

  /** Forgets the sandbox's router; true when one was remembered. */
  boolean forgetRouter(String sandboxId) {
    return routers.remove(sandboxId) != null;
  }

  /** {@code SandboxGetTaskId}, then {@code TaskGetCommandRouterAccess}. */
  private Future<Router> lookUpRouter(String sandboxId, String op) {
    Api.SandboxGetTaskIdRequest req = Api.SandboxGetTaskIdRequest.newBuilder().setSandboxId(sandboxId)
        .setTimeout(Math.max(1, settings.requestTimeout().toSeconds() - 1)).setWaitUntilReady(true).build();
    return call("SandboxGetTaskId", req, Api.SandboxGetTaskIdResponse.getDefaultInstance(), op).compose(r -> {
      if (!r.hasTaskId() || r.hasTaskResult()) {
        return Future.failedFuture(ModalErrors.of(ErrorCode.NOT_FOUND, op, false, Outcome.FAILED));
      }
      String taskId = r.getTaskId();
      return call("TaskGetCommandRouterAccess", Api.TaskGetCommandRouterAccessRequest.newBuilder().setTaskId(taskId)
          .build(), Api.TaskGetCommandRouterAccessResponse.getDefaultInstance(), op)
          .map(a -> new Router(taskId, Endpoint.of(a.getUrl()), a.getJwt()));
    });
  }

  Future<Void> close() {
    return Future.all(plain.close(), tls.close()).mapEmpty();
  }
}
