package ai.bespokelabs.sandbox.benchmarks;

import ai.bespokelabs.sandbox.adapters.modal.ModalSimulator;
import com.google.protobuf.Message;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpVersion;
import io.vertx.core.net.SocketAddress;
import io.vertx.grpc.client.GrpcClient;
import io.vertx.grpc.client.GrpcClientOptions;
import io.vertx.grpc.client.GrpcClientResponse;
import io.vertx.grpc.common.GrpcMessageDecoder;
import io.vertx.grpc.common.GrpcMessageEncoder;
import io.vertx.grpc.common.ServiceMethod;
import io.vertx.grpc.common.ServiceName;
import java.net.URI;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import modal.client.Api;
import modal.task_command_router.TaskCommandRouterOuterClass.TaskExecStartRequest;
import modal.task_command_router.TaskCommandRouterOuterClass.TaskExecStartResponse;
import modal.task_command_router.TaskCommandRouterOuterClass.TaskExecStdioFileDescriptor;
import modal.task_command_router.TaskCommandRouterOuterClass.TaskExecStdioReadRequest;
import modal.task_command_router.TaskCommandRouterOuterClass.TaskExecStdioReadResponse;
import modal.task_command_router.TaskCommandRouterOuterClass.TaskExecStdoutConfig;
import modal.task_command_router.TaskCommandRouterOuterClass.TaskExecWaitRequest;
import modal.task_command_router.TaskCommandRouterOuterClass.TaskExecWaitResponse;

/**
 * The Modal simulator reached directly with the Vert.x gRPC client, making the calls the modal adapter makes:
 * create = {@code AppGetOrCreate}, {@code ImageGetOrCreate} (and {@code ImageJoinStreaming} while the image is
 * being built), {@code SandboxCreate}; exec = {@code SandboxGetTaskId},
 * {@code TaskGetCommandRouterAccess}, {@code TaskExecStart}, both {@code TaskExecStdioRead} streams read to their
 * end and {@code TaskExecWait}; destroy = {@code SandboxTerminate}. Called from the benchmark's thread.
 */
final class ModalDirect implements ProviderBenchmark.Direct, AutoCloseable {
  static final ServiceName API = ServiceName.create("modal.client", "ModalClient");
  static final ServiceName ROUTER = ServiceName.create("modal.task_command_router", "TaskCommandRouter");

  private final Vertx vertx = Vertx.vertx();
  private final GrpcClient grpc = GrpcClient.client(vertx, new GrpcClientOptions(),
      new HttpClientOptions().setProtocolVersion(HttpVersion.HTTP_2).setHttp2ClearTextUpgrade(false));
  private final SocketAddress server;

  ModalDirect(ModalSimulator sim) {
    URI uri = URI.create(sim.serverUrl());
    this.server = SocketAddress.inetSocketAddress(uri.getPort(), uri.getHost());
  }

  private <Req extends Message, Resp extends Message> Future<GrpcClientResponse<Req, Resp>> send(ServiceName service,
      String method, Req request, Resp prototype, String jwt) {
    ServiceMethod<Resp, Req> m = ServiceMethod.client(service, method, GrpcMessageEncoder.encoder(),
        GrpcMessageDecoder.decoder(prototype));
    return grpc.request(server, m).compose(req -> {
      if (jwt != null) {
        req.headers().set("authorization", "Bearer " + jwt);
      } else {
        req.headers().set("x-modal-token-id", ModalSimulator.TOKEN_ID)
            .set("x-modal-token-secret", ModalSimulator.TOKEN_SECRET).set("x-modal-client-type", "8")
            .set("x-modal-client-version", "0.5.0");
      }
      return req.send(request);
    });
  }

  private <Req extends Message, Resp extends Message> Resp call(ServiceName service, String method, Req request,
      Resp prototype, String jwt) {
    try {
      return send(service, method, request, prototype, jwt).compose(GrpcClientResponse::last)
          .await(30, TimeUnit.SECONDS);
    } catch (Exception e) {
      throw new IllegalStateException("modal " + method, e);
    }
  }

  @Override
  public String create() {
    String app = call(API, "AppGetOrCreate", Api.AppGetOrCreateRequest.newBuilder().setAppName("bench")
        .setObjectCreationType(Api.ObjectCreationType.OBJECT_CREATION_TYPE_CREATE_IF_MISSING).build(),
        Api.AppGetOrCreateResponse.getDefaultInstance(), null).getAppId();
    Api.ImageGetOrCreateResponse built = call(API, "ImageGetOrCreate", Api.ImageGetOrCreateRequest.newBuilder()
        .setAppId(app).setImage(Api.Image.newBuilder().addDockerfileCommands("FROM python:3.12-slim")).build(),
        Api.ImageGetOrCreateResponse.getDefaultInstance(), null);
    String image = built.getImageId();
    if (!built.hasResult()) {
      join(image);
    }
    return call(API, "SandboxCreate", Api.SandboxCreateRequest.newBuilder().setAppId(app)
        .setDefinition(Api.Sandbox.newBuilder().addAllEntrypointArgs(List.of("sleep", "48h")).setImageId(image)
            .setTimeoutSecs(600))
        .addTags(Api.SandboxTag.newBuilder().setTagName("bench").setTagValue("1")).build(),
        Api.SandboxCreateResponse.getDefaultInstance(), null).getSandboxId();
  }

  /** Follows the image's build ({@code ImageJoinStreaming}, resent from the last entry id) until its result. */
  private void join(String image) {
    String[] last = {""};
    for (int attempt = 0; attempt < 100; attempt++) {
      Api.GenericResult[] result = new Api.GenericResult[1];
      try {
        send(API, "ImageJoinStreaming", Api.ImageJoinStreamingRequest.newBuilder().setImageId(image).setTimeout(55)
            .setLastEntryId(last[0]).build(), Api.ImageJoinStreamingResponse.getDefaultInstance(), null)
            .compose(resp -> {
              resp.handler(m -> {
                if (!m.getEntryId().isEmpty()) {
                  last[0] = m.getEntryId();
                }
                if (m.hasResult()) {
                  result[0] = m.getResult();
                }
              });
              return resp.end();
            }).await(60, TimeUnit.SECONDS);
      } catch (Exception e) {
        throw new IllegalStateException("modal ImageJoinStreaming", e);
      }
      if (result[0] != null) {
        if (result[0].getStatus() != Api.GenericResult.GenericStatus.GENERIC_STATUS_SUCCESS) {
          throw new IllegalStateException("modal image build ended with " + result[0].getStatus());
        }
        return;
      }
    }
    throw new IllegalStateException("modal image build did not end");
  }

  @Override
  public void exec(String id) {
    String task = call(API, "SandboxGetTaskId", Api.SandboxGetTaskIdRequest.newBuilder().setSandboxId(id)
        .setTimeout(10).setWaitUntilReady(true).build(), Api.SandboxGetTaskIdResponse.getDefaultInstance(), null)
        .getTaskId();
    String jwt = call(API, "TaskGetCommandRouterAccess", Api.TaskGetCommandRouterAccessRequest.newBuilder()
        .setTaskId(task).build(), Api.TaskGetCommandRouterAccessResponse.getDefaultInstance(), null).getJwt();
    String exec = UUID.randomUUID().toString();
    call(ROUTER, "TaskExecStart", TaskExecStartRequest.newBuilder().setTaskId(task).setExecId(exec)
        .addCommandArgs("true").setStdoutConfig(TaskExecStdoutConfig.TASK_EXEC_STDOUT_CONFIG_PIPE).build(),
        TaskExecStartResponse.getDefaultInstance(), jwt);
    Future<?> out = read(task, exec, jwt, TaskExecStdioFileDescriptor.TASK_EXEC_STDIO_FILE_DESCRIPTOR_STDOUT);
    Future<?> err = read(task, exec, jwt, TaskExecStdioFileDescriptor.TASK_EXEC_STDIO_FILE_DESCRIPTOR_STDERR);
    TaskExecWaitResponse end = call(ROUTER, "TaskExecWait", TaskExecWaitRequest.newBuilder().setTaskId(task)
        .setExecId(exec).build(), TaskExecWaitResponse.getDefaultInstance(), jwt);
    try {
      Future.all(out, err).await(30, TimeUnit.SECONDS);
    } catch (Exception e) {
      throw new IllegalStateException("modal TaskExecStdioRead", e);
    }
    if (end.hasSignal() || end.getCode() != 0) {
      throw new IllegalStateException("modal exec: true ended with " + end);
    }
  }

  private Future<Void> read(String task, String exec, String jwt, TaskExecStdioFileDescriptor fd) {
    return send(ROUTER, "TaskExecStdioRead", TaskExecStdioReadRequest.newBuilder().setTaskId(task).setExecId(exec)
        .setFileDescriptor(fd).build(), TaskExecStdioReadResponse.getDefaultInstance(), jwt)
        .compose(GrpcClientResponse::end);
  }

  @Override
  public void destroy(String id) {
    call(API, "SandboxTerminate", Api.SandboxTerminateRequest.newBuilder().setSandboxId(id).build(),
        Api.SandboxTerminateResponse.getDefaultInstance(), null);
  }

  @Override
  public void close() {
    vertx.close();
  }
}
