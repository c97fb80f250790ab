package ai.bespokelabs.sandbox.adapters.local;

import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.adapters.AdapterVerticle;
import ai.bespokelabs.sandbox.core.bus.BusRuntimeClient;
import ai.bespokelabs.sandbox.core.bus.Messages;
import ai.bespokelabs.sandbox.core.bus.Messages.DestroySandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecResult;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.SandboxCreated;
import ai.bespokelabs.sandbox.core.bus.Messages.SandboxDestroyed;
import ai.bespokelabs.sandbox.core.bus.RuntimeClient;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import java.nio.file.Path;
import java.time.Clock;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The local provider behind a real {@link AdapterVerticle} on a real event bus. */
class LocalAdapterVerticleTest {
  private static final RuntimeClient.Runner RUNNER = new RuntimeClient.Runner(LocalProvider.BACKEND, "node1");

  @TempDir
  Path data;

  private Vertx vertx;
  private RuntimeClient runtime;

  @BeforeEach
  void deploy() throws Exception {
    vertx = Vertx.vertx();
    Messages.registerCodecs(vertx.eventBus());
    runtime = new BusRuntimeClient(vertx, "node1", backend -> true);
    await(vertx.deployVerticle(new AdapterVerticle(
        // the bus contract under test, not privileges: programs start directly, so a missing one fails to spawn
        new ai.bespokelabs.sandbox.adapters.host.BlockingBackend(new LocalProvider("local", data, Clock.systemUTC(),
            HostWrapper.NONE, new HostUsers(java.util.Optional.empty(), false))),
        "node1", 1 << 20)));
  }

  @AfterEach
  void close() throws Exception {
    await(vertx.close());
  }

  private static <T> T await(Future<T> future) throws Exception {
    return future.toCompletionStage().toCompletableFuture().get(10, SECONDS);
  }

  /** The failure an execution ends with, decoded by the runtime client the way every sender gets it. */
  private RuntimeException failure(ExecSandbox body) {
    try {
      await(runtime.exec(RUNNER, body));
    } catch (ExecutionException e) {
      assertThat(e.getCause()).isInstanceOf(RuntimeException.class);
      return (RuntimeException) e.getCause();
    } catch (Exception e) {
      throw new AssertionError(e);
    }
    throw new AssertionError("request succeeded");
  }

  @Test
  void createExecAndDestroyRoundTrip() throws Exception {
    SandboxCreated created = await(runtime.create(Fixtures.create("sbx_a", Map.of("WHO", "bus"), null)));
    assertThat(created.nodeId()).isEqualTo("node1");

    String code = "import os; print('hi', os.environ['WHO'])";
    ExecSandbox exec = new ExecSandbox("sbx_a", "exe_1", created.providerResourceId(), code, "python", null, null,
        Map.of(), null, 10, 1024);
    ExecResult result = await(runtime.exec(RUNNER, exec));
    assertThat(result.exitCode()).isZero();
    assertThat(result.stdout()).isEqualTo("hi bus\n");

    SandboxDestroyed destroyed =
        await(runtime.destroy(LocalProvider.BACKEND, "node1", new DestroySandbox("sbx_a", created.providerResourceId())));
    assertThat(destroyed.alreadyGone()).isFalse();
  }

  @Test
  void providerExceptionArrivesAsTheSameProviderError() throws Exception {
    await(runtime.create(Fixtures.create("sbx_a", null, null)));

    RuntimeException decoded =
        failure(Fixtures.exec("sbx_a", null, "no-such-program-4f1c", List.of("x"), Map.of(), null));

    assertThat(decoded).isInstanceOfSatisfying(ProviderException.class, e -> assertThat(e.error()).isEqualTo(
        ProviderError.of(ErrorCode.EXECUTION_FAILED, "local", "execute", false, ProviderError.Outcome.FAILED)));
  }

  @Test
  void apiExceptionArrivesWithItsStatusAndDetail() {
    RuntimeException decoded = failure(Fixtures.shell("sbx_unknown", "true"));

    assertThat(decoded).isInstanceOfSatisfying(ApiException.class, e -> {
      assertThat(e.status()).isEqualTo(409);
      assertThat(e.detail()).isEqualTo("sandbox runtime is unavailable after a control-plane restart");
    });
  }
}
