package ai.bespokelabs.sandbox.adapters.modal;

import ai.bespokelabs.sandbox.adapters.modal.ModalSimulator.Status;
import io.vertx.core.Context;
import io.vertx.grpc.common.GrpcStatus;
import io.vertx.grpc.server.GrpcServerResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import modal.client.Api;
import modal.client.Api.GenericResult.GenericStatus;

/**
 * The simulator's images, built asynchronously as Modal builds them. {@code ImageGetOrCreate} of a recipe it has
 * not seen starts a build and answers the image's id at once without a {@code result} (Modal's proto: "result of
 * build - only set if the image has finished building"); the same recipe gets the same id, with the result once
 * the build ended. A build writes a few log entries (each with an entry id) over {@link #buildTime} and then its
 * result: success, or failure for {@link #FAILING_IMAGE}. {@code ImageJoinStreaming} sends the entries after
 * {@code last_entry_id}, then those still to come and the result, and ends without a result when the request's
 * {@code timeout} passes first, as Modal does. Refused as violations: a join without an image id or a timeout
 * (Modal's clients send 55 s), or with an entry id this image's build never handed out. {@code SandboxCreate}
 * with an image still building (or whose build failed) is {@code FAILED_PRECONDITION}, as on Modal. Faults: a
 * join that ends early without a result ({@link #endJoinAfter}), joins that never answer ({@link #holdJoins}).
 */
final class ModalImagesSim {
  /** A registry reference whose build fails (its log and Modal's exception say why). */
  static final String FAILING_IMAGE = "registry.example/fails-to-build:1";
  /** The exception text a failed build reports. */
  static final String FAILURE_EXCEPTION = "Image build for the requested image failed:\n  RUN step exited with code 1";
  /** A log line of every build, which must never reach a tenant. */
  static final String LOG_LINE = "sim-build-log: downloading layers";
  static final int ENTRIES = 3;
  /** The longest join timeout accepted (Modal's clients send 55 s). */
  static final float MAX_JOIN_TIMEOUT_SECS = 60;

  private final ModalSimulator sim;
  private final Path empty;
  private final Map<String, String> byRecipe = new ConcurrentHashMap<>();
  private final Map<String, Build> builds = new ConcurrentHashMap<>();
  private final List<Api.ImageJoinStreamingRequest> joins = new CopyOnWriteArrayList<>();
  private final AtomicInteger started = new AtomicInteger();
  private final List<Integer> endAfter = new CopyOnWriteArrayList<>();
  private final AtomicInteger hold = new AtomicInteger();
  private volatile long buildMs = 300;

  /** One build: its entries so far, its result once ended, and the joins waiting for more. */
  static final class Build {
    final String imageId;
    final boolean fails;
    final List<Api.ImageJoinStreamingResponse> entries = new ArrayList<>();
    final List<Consumer<Api.ImageJoinStreamingResponse>> watchers = new ArrayList<>();
    Api.GenericResult result;

    Build(String imageId, boolean fails) {
      this.imageId = imageId;
      this.fails = fails;
    }

    synchronized boolean built() {
      return result != null && result.getStatus() == GenericStatus.GENERIC_STATUS_SUCCESS;
    }
  }

  ModalImagesSim(ModalSimulator sim, Path empty) {
    this.sim = sim;
    this.empty = empty;
  }

  /** Builds started from now on take this long. */
  void buildTime(Duration d) {
    buildMs = d.toMillis();
  }

  /** The next join stream ends (without a result) once it has sent {@code entries} entries. */
  void endJoinAfter(int entries) {
    endAfter.add(entries);
  }

  /** The next {@code n} join streams send nothing and never end, whatever their timeout (a server gone quiet). */
  void holdJoins(int n) {
    hold.set(n);
  }

  /** Every join request received, in order. */
  List<Api.ImageJoinStreamingRequest> joins() {
    return joins;
  }

  /** Builds started so far. */
  int buildsStarted() {
    return started.get();
  }

  void clearFaults() {
    endAfter.clear();
    hold.set(0);
    buildMs = 300;
  }

  /** The recipe's image: the one already built or building, else a new build. */
  Api.ImageGetOrCreateResponse getOrCreate(List<String> commands) {
    String recipe = String.join("\n", commands);
    String id = byRecipe.computeIfAbsent(recipe, k -> {
      String imageId = sim.id("im");
      Build b = new Build(imageId, commands.get(0).equals("FROM " + FAILING_IMAGE));
      builds.put(imageId, b);
      started.incrementAndGet();
      run(b, buildMs);
      return imageId;
    });
    Build b = builds.get(id);
    Api.ImageGetOrCreateResponse.Builder out = Api.ImageGetOrCreateResponse.newBuilder().setImageId(id);
    synchronized (b) {
      if (b.result != null) {
        out.setResult(b.result);
      }
    }
    return out.build();
  }

  /** Its log entries spread over {@code ms}, then its result. */
  private void run(Build b, long ms) {
    for (int i = 1; i <= ENTRIES; i++) {
      int n = i;
      sim.vertx().setTimer(Math.max(1, ms * i / (ENTRIES + 1)), t -> add(b, Api.ImageJoinStreamingResponse.newBuilder()
          .setEntryId(System.currentTimeMillis() + "-" + n)
          .addTaskLogs(Api.TaskLogs.newBuilder().setData(LOG_LINE + " step " + n + "/" + ENTRIES + "\n")
              .setTimestamp(System.currentTimeMillis() / 1000.0))
          .build(), null));
    }
    sim.vertx().setTimer(Math.max(1, ms), t -> {
      Api.GenericResult result = b.fails
          ? Api.GenericResult.newBuilder().setStatus(GenericStatus.GENERIC_STATUS_FAILURE)
              .setException(FAILURE_EXCEPTION).setExitcode(1).build()
          : Api.GenericResult.newBuilder().setStatus(GenericStatus.GENERIC_STATUS_SUCCESS).build();
      add(b, Api.ImageJoinStreamingResponse.newBuilder().setEntryId(System.currentTimeMillis() + "-" + (ENTRIES + 1))
          .setResult(result).setEof(true).build(), result);
    });
  }

  private static void add(Build b, Api.ImageJoinStreamingResponse entry, Api.GenericResult result) {
    List<Consumer<Api.ImageJoinStreamingResponse>> notify;
    synchronized (b) {
      b.entries.add(entry);
      if (result != null) {
        b.result = result;
      }
      notify = List.copyOf(b.watchers);
    }
    notify.forEach(w -> w.accept(entry));
  }

  /** The built image's files, or a refusal: unknown is {@code NOT_FOUND}, not (yet) built {@code FAILED_PRECONDITION}. */
  Path files(String imageId) {
    Build b = builds.get(imageId);
    if (b == null) {
      return null;
    }
    if (!b.built()) {
      throw new Status(GrpcStatus.FAILED_PRECONDITION, "Image " + imageId + " has not been built");
    }
    return empty;
  }

  /** Whether {@code imageId} is one of the builds' images. */
  boolean known(String imageId) {
    return builds.containsKey(imageId);
  }

  /** {@code ImageJoinStreaming}: what the build has after the request's entry id, then what comes, until its end. */
  void join(Api.ImageJoinStreamingRequest r, GrpcServerResponse<Api.ImageJoinStreamingRequest,
      Api.ImageJoinStreamingResponse> resp) {
    joins.add(r);
    if (r.getImageId().isBlank()) {
      throw sim.invalid("ImageJoinStreaming: image_id is required");
    }
    if (!(r.getTimeout() > 0 && r.getTimeout() <= MAX_JOIN_TIMEOUT_SECS)) {
      throw sim.invalid("ImageJoinStreaming: timeout must be in (0, " + MAX_JOIN_TIMEOUT_SECS + "] s, got "
          + r.getTimeout());
    }
    Build b = builds.get(r.getImageId());
    if (b == null) {
      throw new Status(GrpcStatus.NOT_FOUND, "Image " + r.getImageId() + " not found");
    }
    if (hold.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
      return;
    }
    Context context = sim.vertx().getOrCreateContext();
    Integer limit = endAfter.isEmpty() ? null : endAfter.remove(0);
    int[] sent = {0};
    boolean[] ended = {false};
    long[] timer = {-1};
    AtomicReference<Consumer<Api.ImageJoinStreamingResponse>> watcher = new AtomicReference<>();
    Runnable stop = () -> {
      ended[0] = true;
      sim.vertx().cancelTimer(timer[0]);
      synchronized (b) {
        b.watchers.remove(watcher.get());
      }
    };
    Runnable end = () -> {
      if (!ended[0]) {
        stop.run();
        resp.end();
      }
    };
    Consumer<Api.ImageJoinStreamingResponse> send = entry -> {
      if (ended[0]) {
        return;
      }
      resp.write(entry);
      sent[0]++;
      if (entry.hasResult() || limit != null && sent[0] >= limit) {
        end.run();
      }
    };
    List<Api.ImageJoinStreamingResponse> backlog;
    synchronized (b) {
      int from = 0;
      if (!r.getLastEntryId().isEmpty()) {
        from = -1;
        for (int i = 0; i < b.entries.size(); i++) {
          if (b.entries.get(i).getEntryId().equals(r.getLastEntryId())) {
            from = i + 1;
          }
        }
        if (from < 0) {
          throw sim.invalid("ImageJoinStreaming: last_entry_id " + r.getLastEntryId() + " was never sent");
        }
      }
      backlog = List.copyOf(b.entries.subList(from, b.entries.size()));
      watcher.set(entry -> context.runOnContext(v -> send.accept(entry)));
      b.watchers.add(watcher.get());
    }
    backlog.forEach(send);
    if (!ended[0]) {
      timer[0] = sim.vertx().setTimer(Math.max(1, (long) (r.getTimeout() * 1000)), t -> end.run());
      resp.exceptionHandler(t -> stop.run()); // the client went away
    }
  }
}
