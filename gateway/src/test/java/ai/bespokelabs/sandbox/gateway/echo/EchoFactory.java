package ai.bespokelabs.sandbox.gateway.echo;

import ai.bespokelabs.sandbox.adapters.spi.Backend;
import ai.bespokelabs.sandbox.adapters.spi.BackendFactory;
import ai.bespokelabs.sandbox.adapters.spi.Capability;
import ai.bespokelabs.sandbox.adapters.spi.Execution;
import ai.bespokelabs.sandbox.adapters.spi.Executions;
import ai.bespokelabs.sandbox.adapters.spi.Inventory;
import ai.bespokelabs.sandbox.adapters.spi.Lifecycle;
import ai.bespokelabs.sandbox.adapters.spi.OutputSink;
import ai.bespokelabs.sandbox.core.bus.Messages.CreateSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.DestroySandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.Resource;
import ai.bespokelabs.sandbox.core.bus.Messages.SandboxDestroyed;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * A backend that exists only on the test class path, registered like every backend (its package and a line in
 * {@code META-INF/services}), to show that adding one needs no shared file: it offers sandboxes whose programs
 * print their command line after the prefix its own setting names. Offered only with its setting
 * {@code ECHO_ENABLED=true}, so the other tests see the usual backends.
 */
public final class EchoFactory implements BackendFactory {
  /** Its settings, declared here alone: nothing else of the gateway names them. */
  public static final String ENABLED = "ECHO_ENABLED";
  public static final String PREFIX = "ECHO_PREFIX";
  public static final String NAME = "echo";

  @Override
  public String name() {
    return NAME;
  }

  @Override
  public boolean nodeBound() {
    return false;
  }

  @Override
  public List<Setting> settings() {
    return List.of(Setting.of(ENABLED, "enabled", false), Setting.of(PREFIX, "prefix", "echo:"));
  }

  @Override
  public Optional<Backend> create(Environment environment) {
    return "true".equals(environment.settings().value(ENABLED))
        ? Optional.of(new Echo(environment.settings().value(PREFIX))) : Optional.empty();
  }

  static final class Echo implements Backend, Lifecycle, Executions, Inventory {
    private final String prefix;

    Echo(String prefix) {
      this.prefix = prefix;
    }

    @Override
    public String name() {
      return NAME;
    }

    @Override
    public boolean nodeBound() {
      return false;
    }

    @Override
    public Set<Capability> capabilities() {
      return Set.of();
    }

    @Override
    public Parts parts() {
      return new Parts(this, this, this, null, null);
    }

    @Override
    public Future<String> create(CreateSandbox request) {
      return Future.succeededFuture("echo-" + request.sandboxId());
    }

    @Override
    public Future<SandboxDestroyed> destroy(DestroySandbox request) {
      return Future.succeededFuture(new SandboxDestroyed(false));
    }

    @Override
    public Future<Execution> start(ExecSandbox request, OutputSink sink) {
      String line = prefix + " " + request.command() + (request.args() == null ? "" : " " + String.join(" ", request.args()));
      return sink.output(OutputSink.Stream.STDOUT, (line + "\n").getBytes(StandardCharsets.UTF_8)).map(v -> {
        sink.exited(0, false, false, 0);
        return new Execution() {
          @Override
          public Future<Void> write(Buffer data) {
            return Future.succeededFuture();
          }

          @Override
          public Future<Void> closeStdin() {
            return Future.succeededFuture();
          }

          @Override
          public Future<Void> signal(String signal) {
            return Future.succeededFuture();
          }
        };
      });
    }

    @Override
    public Future<List<Resource>> list() {
      return Future.succeededFuture(List.of());
    }

    @Override
    public Future<Void> checkHealth() {
      return Future.succeededFuture();
    }
  }
}
