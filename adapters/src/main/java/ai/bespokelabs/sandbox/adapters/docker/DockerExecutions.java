package ai.bespokelabs.sandbox.adapters.docker;

import ai.bespokelabs.sandbox.adapters.exec.CommandLine;
import ai.bespokelabs.sandbox.adapters.exec.Timeouts;
import ai.bespokelabs.sandbox.adapters.exec.Utf8;
import ai.bespokelabs.sandbox.adapters.spi.Execution;
import ai.bespokelabs.sandbox.adapters.spi.Executions;
import ai.bespokelabs.sandbox.adapters.spi.OutputSink;
import ai.bespokelabs.sandbox.adapters.spi.OutputSink.Stream;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecSandbox;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Executions of the docker backend: each is an engine exec whose multiplexed output is demultiplexed into our
 * stdout and stderr. Each exec runs under a one-line {@code sh} wrapper that reports the program's process id
 * on stderr (stripped from the output) and then {@code exec}s the program, which is a process-group leader in
 * its container: signals and timeouts kill that group through a second exec, since the Engine API has no way
 * to signal an exec.
 */
final class DockerExecutions implements Executions {
  private static final Logger LOG = LoggerFactory.getLogger(DockerExecutions.class);
  private static final Duration CALL = Duration.ofSeconds(30);
  private static final Pattern PID_LINE = Pattern.compile("^bsx:(\\d{1,10})\n");
  private static final String WRAPPER = "printf 'bsx:%d\\n' $$ >&2; exec \"$@\"";

  private final DockerEngine engine;
  /** The executions still running, by container: a destroy for an expired sandbox ends them as timed out. */
  private final ConcurrentMap<String, Set<Run>> running = new ConcurrentHashMap<>();

  DockerExecutions(DockerEngine engine) {
    this.engine = engine;
  }

  @Override
  public Future<Execution> start(ExecSandbox request, OutputSink sink) {
    String container = request.providerResourceId();
    List<String> argv = new ArrayList<>(List.of("sh", "-c", WRAPPER, "sh"));
    argv.addAll(CommandLine.of(request.code(), request.language(), request.command(), request.args()));
    JsonArray env = new JsonArray();
    request.env().forEach((k, v) -> env.add(k + "=" + v));
    JsonObject body = new JsonObject().put("AttachStdin", request.keepStdin()).put("AttachStdout", true)
        .put("AttachStderr", true).put("Tty", false).put("Cmd", new JsonArray(argv)).put("Env", env)
        .put("WorkingDir", workingDir(request.cwd()));
    return engine.post("execute", "/containers/" + container + "/exec", body, CALL).compose(created -> {
      if (created.status() == 409) {
        return Future.failedFuture(ApiException.conflict("sandbox container is not running"));
      }
      if (created.status() != 201) {
        return Future.failedFuture(engine.statusFailure("execute", created, ErrorCode.EXECUTION_FAILED));
      }
      String execId = created.json().getString("Id");
      return HijackedStream.start(engine, execId).recover(t -> Future.failedFuture(t instanceof HijackedStream.Refused r
          ? engine.statusFailure("execute", new DockerEngine.Response(r.status, Buffer.buffer()),
              ErrorCode.EXECUTION_FAILED)
          : engine.transportFailure("execute", t))).map(stream -> {
            if (!request.keepStdin()) {
              stream.closeWrite();
            }
            Run run = new Run(container, execId, stream, sink, request.timeoutSecs());
            running.computeIfAbsent(container, c -> ConcurrentHashMap.newKeySet()).add(run);
            run.begin();
            return run;
          });
    });
  }

  /** The sandbox in {@code container} is being destroyed because its time ran out. */
  void expired(String container) {
    running.getOrDefault(container, Set.of()).forEach(e -> e.sandboxExpired = true);
  }

  /** The exec's working directory: the sandbox's, or {@code cwd} (relative ones under it). */
  static String workingDir(String cwd) {
    if (cwd == null || cwd.isBlank()) {
      return DockerProvider.WORKDIR;
    }
    String path = cwd.startsWith("/") ? cwd : DockerProvider.WORKDIR + "/" + cwd;
    return java.nio.file.Path.of(path).normalize().toString();
  }

  /** One running exec: its frames are read on demand, and it is controlled through further execs. */
  private final class Run implements Execution {
    private final String container;
    private final String execId;
    private final HijackedStream stream;
    private final OutputSink sink;
    private final int timeoutSecs;
    private final Promise<Long> pid = Promise.promise();
    private final long startedNanos = System.nanoTime();
    private volatile boolean timedOut;
    /** Its sandbox is being destroyed because its time ran out. */
    private volatile boolean sandboxExpired;
    private volatile boolean signalled;
    private byte[] stdoutCarry = new byte[0];
    private byte[] stderrCarry = new byte[0];
    private final ByteArrayOutputStream pidLine = new ByteArrayOutputStream();
    private long timer = -1;

    Run(String container, String execId, HijackedStream stream, OutputSink sink, int timeoutSecs) {
      this.container = container;
      this.execId = execId;
      this.stream = stream;
      this.sink = sink;
      this.timeoutSecs = timeoutSecs;
    }

    void begin() {
      if (timeoutSecs > 0) {
        timer = engine.vertx().setTimer(TimeUnit.SECONDS.toMillis(timeoutSecs), id -> {
          timedOut = true;
          kill("KILL");
        });
      }
      stream.read(this::frame, this::ended);
    }

    private Future<Void> frame(int type, byte[] data) {
      if (type == 1) {
        return forward(Stream.STDOUT, data, false);
      }
      if (type == 2) {
        return forward(Stream.STDERR, pid.future().isComplete() ? data : takePid(data), false);
      }
      return Future.succeededFuture();
    }

    private void ended(boolean broken) {
      if (timer >= 0) {
        engine.vertx().cancelTimer(timer);
      }
      pid.tryComplete(-1L);
      running.computeIfPresent(container, (c, set) -> set.remove(this) && set.isEmpty() ? null : set);
      forward(Stream.STDOUT, new byte[0], true)
          .transform(ar -> forward(Stream.STDERR, new byte[0], true))
          .transform(ar -> exitCode(broken))
          .onComplete(ar -> finish(ar.succeeded() ? ar.result() : -1));
    }

    private void finish(int code) {
      long ms = (System.nanoTime() - startedNanos) / 1_000_000;
      boolean out = timedOut;
      Future<Void> last = Future.succeededFuture();
      if (!out && sandboxExpired && code != 0) {
        // its container was removed because the sandbox's time ran out: a timeout, as its own would be
        out = true;
        last = sink.output(Stream.STDERR, Timeouts.sandboxMessage(ms));
      } else if (out) {
        last = sink.output(Stream.STDERR, Timeouts.message(timeoutSecs));
      }
      boolean timeout = out;
      last.onComplete(ar -> sink.exited(timeout ? Timeouts.EXIT_CODE : code, timeout,
          signalled && !timeout && code != 0, ms));
    }

    /** Strips the wrapper's {@code bsx:<pid>} line from the start of stderr. */
    private byte[] takePid(byte[] data) {
      pidLine.writeBytes(data);
      byte[] all = pidLine.toByteArray();
      int nl = indexOf(all, (byte) '\n');
      if (nl < 0 && all.length < 24) {
        return new byte[0];
      }
      Matcher m = PID_LINE.matcher(new String(all, 0, nl < 0 ? all.length : nl + 1, StandardCharsets.ISO_8859_1));
      if (m.find()) {
        pid.tryComplete(Long.parseLong(m.group(1)));
        return Arrays.copyOfRange(all, nl + 1, all.length);
      }
      pid.tryComplete(-1L);
      return all;
    }

    /** Hands on the complete characters of carry + data; the rest waits for the next frame (or the end). */
    private Future<Void> forward(Stream which, byte[] data, boolean last) {
      byte[] carry = which == Stream.STDOUT ? stdoutCarry : stderrCarry;
      byte[] all = carry.length == 0 ? data : concat(carry, data);
      int cut = last ? all.length : Utf8.completePrefix(all, all.length);
      byte[] rest = cut == all.length ? new byte[0] : Arrays.copyOfRange(all, cut, all.length);
      if (which == Stream.STDOUT) {
        stdoutCarry = rest;
      } else {
        stderrCarry = rest;
      }
      return cut > 0 ? sink.output(which, cut == all.length ? all : Arrays.copyOf(all, cut)) : Future.succeededFuture();
    }

    /**
     * The exec's exit code from the engine, waiting for it to record the end (an engine under load may
     * close the stream well before it does).
     */
    private Future<Integer> exitCode(boolean broken) {
      return exitCode(System.nanoTime() + TimeUnit.SECONDS.toNanos(broken ? 2 : 30), 0);
    }

    private Future<Integer> exitCode(long deadline, int attempt) {
      return engine.get("execute", "/exec/" + execId + "/json", CALL).compose(r -> {
        if (!r.ok()) {
          return Future.succeededFuture(-1);
        }
        JsonObject j = r.json();
        if (!j.getBoolean("Running", false) && j.getValue("ExitCode") instanceof Number n) {
          return Future.succeededFuture(n.intValue());
        }
        if (System.nanoTime() >= deadline) {
          return Future.succeededFuture(-1);
        }
        return engine.vertx().timer(Math.min(200, 10L * (attempt + 1)), TimeUnit.MILLISECONDS)
            .compose(v -> exitCode(deadline, attempt + 1));
      }, t -> Future.succeededFuture(-1));
    }

    @Override
    public Future<Void> write(Buffer data) {
      return stream.write(data).recover(t -> Future.failedFuture(ApiException.conflict("stdin is closed")));
    }

    @Override
    public Future<Void> closeStdin() {
      return stream.closeWrite();
    }

    @Override
    public Future<Void> signal(String signal) {
      signalled = true;
      return kill(signal);
    }

    /** Sends {@code signal} to the program's process group from a second exec in the container. */
    private Future<Void> kill(String signal) {
      return pid.future().timeout(5, TimeUnit.SECONDS).otherwise(-1L).compose(p -> {
        if (p <= 0) {
          return Future.<Void>succeededFuture();
        }
        JsonObject body = new JsonObject().put("AttachStdout", false).put("AttachStderr", false)
            .put("Cmd", new JsonArray().add("sh").add("-c").add("kill -s " + signal + " -" + p
                + " 2>/dev/null || kill -s " + signal + " " + p));
        return engine.post("signal", "/containers/" + container + "/exec", body, CALL)
            .compose(r -> r.status() == 201
                ? engine.post("signal", "/exec/" + r.json().getString("Id") + "/start",
                    new JsonObject().put("Detach", true).put("Tty", false), CALL).<Void>mapEmpty()
                : Future.<Void>succeededFuture())
            .otherwise(t -> {
              LOG.debug("signal {} to exec {} failed: {}", signal, execId,
                  t instanceof ProviderException pe ? pe.error().code() : t.getClass().getSimpleName());
              return null;
            });
      });
    }
  }

  private static int indexOf(byte[] b, byte x) {
    for (int i = 0; i < b.length; i++) {
      if (b[i] == x) {
        return i;
      }
    }
    return -1;
  }

  private static byte[] concat(byte[] a, byte[] b) {
    byte[] out = Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }
}
