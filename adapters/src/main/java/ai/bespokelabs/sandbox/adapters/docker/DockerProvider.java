package ai.bespokelabs.sandbox.adapters.docker;

import ai.bespokelabs.sandbox.adapters.egress.ContainerNetwork;
import ai.bespokelabs.sandbox.adapters.spi.Backend;
import ai.bespokelabs.sandbox.adapters.spi.Capability;
import ai.bespokelabs.sandbox.adapters.spi.Executions;
import ai.bespokelabs.sandbox.adapters.spi.FileSystem;
import ai.bespokelabs.sandbox.adapters.spi.Inventory;
import ai.bespokelabs.sandbox.adapters.spi.Lifecycle;
import ai.bespokelabs.sandbox.adapters.spi.Metrics;
import ai.bespokelabs.sandbox.core.bus.Messages.CreateSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.DestroySandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.SandboxDestroyed;
import ai.bespokelabs.sandbox.core.bus.Messages.SnapshotSandbox;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import ai.bespokelabs.sandbox.core.model.SandboxConfig;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@code docker} backend: each sandbox is a container of the Docker Engine named by {@code DOCKER_HOST}
 * (any engine speaking its API, e.g. Podman's compatible service), kept alive by a small shell loop that
 * also reaps orphans; executions are engine execs ({@link DockerExecutions}). The engine is spoken to with
 * the Vert.x HTTP client on the adapter's context: nothing blocks a thread.
 *
 * <p>Containers carry labels with the organization, sandbox id and create token, so reconciliation lists
 * ours and an ambiguous create is cleaned up by label.
 *
 * <p>Containers without network access have none ({@code NetworkMode: none}); the others join the engine
 * network {@value #NETWORK} ({@link DockerNetwork}), whose egress rules the
 * gateway puts in force ({@link #requireEgress}) before the first container joins it.
 */
public final class DockerProvider implements Backend, Lifecycle {
  private final Parts parts;
  private final boolean egressElsewhere;
  public static final String BACKEND = "docker";
  static final String LABEL = "ai.bespokelabs.sandbox.";
  static final String MANAGED = LABEL + "managed";
  static final String ORGANIZATION = LABEL + "organization";
  static final String SANDBOX = LABEL + "sandbox";
  static final String CREATE_TOKEN = LABEL + "create-token";
  static final String WORKDIR = "/workspace";
  private static final java.util.regex.Pattern SNAPSHOT_ID = java.util.regex.Pattern.compile("sha256:[a-f0-9]{64}");
  /** The engine network of containers with network access. */
  public static final String NETWORK = DockerNetwork.NAME;

  private static final Logger LOG = LoggerFactory.getLogger(DockerProvider.class);
  private static final Duration CALL = Duration.ofSeconds(30);
  private static final Duration PULL = Duration.ofMinutes(10);
  /**
   * The container's first process: stays up, reaps orphaned processes (a shell's {@code wait} collects any
   * child, and orphans are re-parented to it) and exits at once on TERM.
   */
  private static final String KEEPALIVE = "trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done";

  private final DockerEngine engine;
  private final DockerExecutions executions;
  private final DockerInventory inventory;
  private final DockerFiles files;
  private final DockerMetrics metrics;
  private final String defaultImage;
  private final ImageNames allowedImages;
  /** Set when this node must not create containers (see {@link #disable}). */
  private volatile String disabled;
  private final DockerNetwork networks;

  public DockerProvider(Vertx vertx, DockerSettings settings) {
    this.engine = new DockerEngine(vertx, DockerHost.parse(settings.host()), BACKEND);
    this.defaultImage = settings.image();
    this.egressElsewhere = settings.egressElsewhere();
    this.allowedImages = ImageNames.allowing(settings.images(), "BESPOKE_DOCKER_IMAGES");
    this.executions = new DockerExecutions(engine);
    this.inventory = new DockerInventory(engine);
    this.files = new DockerFiles(engine, executions);
    this.metrics = new DockerMetrics(engine);
    this.networks = new DockerNetwork(engine);
    this.parts = new Parts(this, executions, inventory, files, metrics);
  }

  @Override
  public Parts parts() {
    return parts;
  }

  @Override
  public String name() {
    return BACKEND;
  }

  @Override
  public ai.bespokelabs.sandbox.adapters.spi.PlacementFacts placement() {
    return new ai.bespokelabs.sandbox.adapters.spi.PlacementFacts(
        ai.bespokelabs.sandbox.adapters.spi.PlacementFacts.Isolation.CONTAINER, false, true, false, true);
  }

  @Override
  public Set<Capability> capabilities() {
    return EnumSet.of(Capability.FILES, Capability.METRICS, Capability.ADOPT, Capability.SNAPSHOT);
  }

  /** Containers live on the engine this node is configured with. */
  @Override
  public boolean nodeBound() {
    return true;
  }

  /**
   * Why no container can be created here: the engine's socket is missing, or its egress rules could not be put in
   * force ({@link #disable}); a create then answers {@code backend_not_installed} with it.
   */
  @Override
  public java.util.Optional<String> unavailable() {
    if (disabled != null) {
      return java.util.Optional.of(disabled);
    }
    return engine.host().present() ? java.util.Optional.empty() : java.util.Optional.of(DockerEngine.NOT_INSTALLED);
  }

  /** From now on no container is created ({@code backend_not_installed}); {@code reason} is shown as is. */
  public void disable(String reason) {
    disabled = java.util.Objects.requireNonNull(reason);
  }

  /**
   * Before the first container with network access joins {@value #NETWORK}, {@code installer} puts its egress
   * rules in force; while it fails, such creates fail with {@code backend_not_installed}.
   */
  public void requireEgress(Function<ContainerNetwork, Future<Void>> installer) {
    networks.requireEgress(installer);
  }

  /** Whether the operator filters this engine's egress on its own host ({@code BESPOKE_DOCKER_EGRESS_ELSEWHERE}). */
  public boolean egressElsewhere() {
    return egressElsewhere;
  }

  /**
   * Whether the engine runs rootless (its {@code /info} lists {@code name=rootless}, as Docker and Podman do):
   * its containers' traffic then leaves through the engine user's own network stack, which rules on this
   * host's forward and input hooks never see.
   */
  public Future<Boolean> rootless() {
    return engine.get("create", "/info", java.time.Duration.ofSeconds(30)).compose(r -> {
      if (!r.ok()) {
        return Future.failedFuture(engine.statusFailure("create", r, ErrorCode.CREATION_FAILED));
      }
      io.vertx.core.json.JsonArray options = r.json().getJsonArray("SecurityOptions", new io.vertx.core.json.JsonArray());
      return Future.succeededFuture(options != null && options.stream()
          .anyMatch(o -> o instanceof String opt && java.util.Arrays.asList(opt.split(",")).contains("name=rootless")));
    });
  }

  /** Whether the engine runs on this host (a unix socket, or TCP on loopback): its bridges are this kernel's. */
  public boolean engineOnThisHost() {
    if (engine.host().isUnix()) {
      return true;
    }
    try {
      return java.net.InetAddress.getByName(engine.host().host()).isLoopbackAddress();
    } catch (java.net.UnknownHostException e) {
      return false;
    }
  }

  /** See {@link DockerNetwork#ready()}. */
  public Future<ContainerNetwork> network() {
    return networks.ready();
  }

  @Override
  public Future<Void> start(Context context) {
    engine.useContext(context);
    return Future.succeededFuture();
  }

  @Override
  public Future<Void> close() {
    return engine.close();
  }

  // ---- create ----------------------------------------------------------------------------------------

  /**
   * Creates and starts the container {@code bsx-<sandbox id>}; repeating a create for the same sandbox
   * returns the same container. The image is pulled when the engine does not have it, and the container is
   * created from the id it resolved to ({@link #image}).
   */
  @Override
  public Future<String> create(CreateSandbox request) {
    java.util.Optional<String> unavailable = unavailable();
    if (unavailable.isPresent()) {
      return Future.failedFuture(new ProviderException(ProviderError.unavailable(BACKEND, "create", unavailable.get())));
    }
    SandboxConfig config = request.config();
    Future<?> network = online(config) ? network().recover(t -> Future.failedFuture(
        t instanceof ProviderException pe ? pe : engine.notInstalled("create"))) : Future.succeededFuture();
    Future<String> image = network.compose(v -> config.snapshotId() != null
        ? snapshotImage(config.snapshotId(), request.organizationId())
        : config.image() != null ? image(config.image(), true) : image(defaultImage, false));
    String name = "bsx-" + request.sandboxId();
    return image.compose(img -> createContainer(name, img, request)
        .compose(id -> engine.post("create", "/containers/" + id + "/start", null, CALL).compose(started -> {
          if (!started.ok() && started.status() != 304) {
            LOG.debug("docker start failed: {}", DockerEngine.message(started));
            return cleanedUp(engine.statusFailure("create", started, ErrorCode.CREATION_FAILED), request);
          }
          return Future.succeededFuture(id);
        }))
        .recover(t -> t instanceof ProviderException e && e.error().outcome() == ProviderError.Outcome.UNKNOWN
            && e.error().context().get("cleanup_status") == null ? cleanedUp(e, request) : Future.failedFuture(t)));
  }

  /**
   * The id of the image a sandbox names, pulled when the engine does not have it. Only names are looked up
   * (qualified, so never taken for an id: {@link ImageNames}), {@code given} ones only when the operator's
   * patterns allow them, and an image of a snapshot is answered as missing whatever name it has: snapshots
   * are reached through their {@code snapshot_id} only.
   */
  private Future<String> image(String image, boolean given) {
    String name;
    try {
      name = ImageNames.qualified(image);
    } catch (ApiException e) {
      return Future.failedFuture(e);
    }
    if (given && !allowedImages.allows(name)) {
      return Future.failedFuture(new ApiException(422, "image " + name + " is not allowed on this gateway"));
    }
    return localImage(name).compose(id -> id != null ? Future.succeededFuture(id)
        : pull(name).compose(v -> localImage(name)).compose(id2 -> id2 != null ? Future.succeededFuture(id2)
            : Future.failedFuture(missingImage())));
  }

  /** The id of the image the engine has under exactly {@code name}; null when it has none (or only a snapshot). */
  private Future<String> localImage(String name) {
    return engine.get("create", "/images/" + DockerEngine.q(name) + "/json", CALL).compose(r -> {
      if (r.status() == 404) {
        return Future.succeededFuture(null);
      }
      if (!r.ok()) {
        LOG.debug("docker image inspect failed: {}", DockerEngine.message(r));
        return Future.failedFuture(engine.statusFailure("create", r, ErrorCode.CREATION_FAILED));
      }
      JsonObject labels = r.json().getJsonObject("Config", new JsonObject()).getJsonObject("Labels");
      if (labels != null && (labels.containsKey(ORGANIZATION) || labels.containsKey(MANAGED))) {
        return Future.failedFuture(missingImage()); // a snapshot: as if there were no such image
      }
      String id = r.json().getString("Id");
      return id == null ? Future.failedFuture(engine.failure(ErrorCode.CREATION_FAILED, "create", false,
          ProviderError.Outcome.FAILED, null)) : Future.succeededFuture(id.startsWith("sha256:") ? id : "sha256:" + id);
    });
  }

  /** What a create answers for an image the engine neither has nor can pull: nothing was created. */
  private static ProviderException missingImage() {
    return new ProviderException(ProviderError.of(ErrorCode.CREATION_FAILED, BACKEND, "create", false,
        ProviderError.Outcome.FAILED).withContext("cleanup_status", "not_found"));
  }

  private Future<String> createContainer(String name, String image, CreateSandbox request) {
    SandboxConfig config = request.config();
    JsonObject labels = new JsonObject().put(MANAGED, "true").put(ORGANIZATION, request.organizationId())
        .put(SANDBOX, request.sandboxId()).put(CREATE_TOKEN, request.createToken());
    JsonObject host = new JsonObject().put("PidsLimit", 1024).put("NetworkMode", online(config) ? NETWORK : "none");
    if (config.memoryMb() != null) {
      host.put("Memory", config.memoryMb() * 1024L * 1024L);
    }
    if (config.cpu() != null) {
      host.put("NanoCpus", Math.round(config.cpu() * 1e9));
    }
    JsonArray env = new JsonArray();
    (config.envVars() == null ? Map.<String, String>of() : config.envVars()).forEach((k, v) -> env.add(k + "=" + v));
    JsonObject body = new JsonObject().put("Image", image)
        .put("Entrypoint", new JsonArray().add("sh").add("-c").add(KEEPALIVE)).put("Cmd", new JsonArray())
        .put("WorkingDir", WORKDIR).put("Env", env).put("Labels", labels).put("HostConfig", host)
        .put("AttachStdin", false).put("AttachStdout", false).put("AttachStderr", false).put("Tty", false);
    return engine.post("create", "/containers/create?name=" + DockerEngine.q(name), body, CALL).compose(r -> {
      if (r.status() == 201) {
        return Future.succeededFuture(r.json().getString("Id"));
      }
      // a name conflict (409 from Docker, 500 from some compatible engines): a repeated create of this sandbox
      return engine.get("create", "/containers/" + DockerEngine.q(name) + "/json", CALL).compose(existing -> {
        if (existing.ok() && request.sandboxId().equals(existing.json().getJsonObject("Config", new JsonObject())
            .getJsonObject("Labels", new JsonObject()).getString(SANDBOX))) {
          return Future.succeededFuture(existing.json().getString("Id"));
        }
        LOG.debug("docker create failed: {}", DockerEngine.message(r));
        return Future.failedFuture(engine.statusFailure("create", r, ErrorCode.CREATION_FAILED));
      });
    });
  }

  /** Network access unless the sandbox says {@code allow_internet: false}. */
  private static boolean online(SandboxConfig config) {
    return config.allowInternet() == null || config.allowInternet();
  }

  /** Pulls a qualified image name ({@link ImageNames#qualified}): its repository, and its digest or tag. */
  private Future<Void> pull(String image) {
    int at = image.indexOf('@');
    String ref = at >= 0 ? image.substring(0, at) : image;
    int slash = ref.lastIndexOf('/');
    int colon = ref.lastIndexOf(':');
    String tag = at >= 0 ? image.substring(at + 1) : colon > slash ? ref.substring(colon + 1) : "latest";
    if (colon > slash) {
      ref = ref.substring(0, colon);
    }
    return engine.post("create", "/images/create?fromImage=" + DockerEngine.q(ref) + "&tag=" + DockerEngine.q(tag),
        null, PULL).compose(r -> {
          // the engine streams progress and reports a failed pull inside a 200 body
          if (!r.ok() || r.body().toString(StandardCharsets.UTF_8).contains("\"error\"")) {
            return Future.failedFuture(missingImage());
          }
          return Future.succeededFuture();
        });
  }

  /**
   * After a failed or ambiguous create, removes whatever carries this create's token and fails with
   * {@code failure} telling what it found: {@code deleted}, {@code not_found} or {@code unknown} (the engine
   * could not be asked).
   */
  private <T> Future<T> cleanedUp(ProviderException failure, CreateSandbox request) {
    return inventory.containers(CREATE_TOKEN + "=" + request.createToken())
        .compose(found -> {
          List<String> ids = found.stream().map(c -> c.getString("Id")).toList();
          return inventory.removeAll(ids).map(v -> ids.isEmpty() ? "not_found" : "deleted");
        })
        .otherwise("unknown")
        .compose(cleanup -> Future.failedFuture(
            new ProviderException(failure.error().withContext("cleanup_status", cleanup), failure)));
  }

  // ---- destroy, adopt, snapshots ----------------------------------------------------------------------

  /**
   * Force-removes the container (and its anonymous volumes); a container already gone is fine. When the
   * sandbox's time ran out, the executions still running in it end as timed out.
   */
  @Override
  public Future<SandboxDestroyed> destroy(DestroySandbox request) {
    if (!engine.host().present()) {
      return Future.failedFuture(engine.notInstalled("destroy"));
    }
    Future<List<String>> ids = request.providerResourceId() != null
        ? Future.succeededFuture(List.of(request.providerResourceId()))
        : inventory.containers(SANDBOX + "=" + request.sandboxId()).map(found -> {
          List<String> out = new ArrayList<>();
          found.forEach(c -> out.add(c.getString("Id")));
          return out;
        });
    return ids.compose(list -> {
      if (request.expired()) {
        list.forEach(executions::expired);
      }
      return inventory.removeAll(list);
    }).map(SandboxDestroyed::new);
  }

  /** A running container of this organization's sandbox; anything else is {@code not_found}. */
  @Override
  public Future<String> adopt(CreateSandbox request, String providerResourceId) {
    return engine.get("adopt", "/containers/" + DockerEngine.q(providerResourceId) + "/json", CALL).compose(r -> {
      JsonObject labels = r.ok() ? r.json().getJsonObject("Config", new JsonObject())
          .getJsonObject("Labels", new JsonObject()) : null;
      boolean ours = labels != null && request.sandboxId().equals(labels.getString(SANDBOX))
          && request.organizationId().equals(labels.getString(ORGANIZATION));
      if (!ours || !r.json().getJsonObject("State", new JsonObject()).getBoolean("Running", false)) {
        return Future.failedFuture(engine.failure(ErrorCode.NOT_FOUND, "adopt", false, ProviderError.Outcome.FAILED,
            null));
      }
      return Future.succeededFuture(r.json().getString("Id"));
    });
  }

  /**
   * Commits the container to an image (labelled like the container, so with its organization) and answers
   * the image id; creating with it as {@code snapshot_id} starts a new container from it, for this
   * organization only. Its name, in the repository {@value ImageNames#SNAPSHOTS}, keeps it from being pruned
   * as an unnamed image and is never one a sandbox may give as {@code image}.
   */
  @Override
  public Future<String> snapshot(SnapshotSandbox request) {
    if (!engine.host().present()) {
      return Future.failedFuture(engine.notInstalled("snapshot"));
    }
    String repo = ImageNames.SNAPSHOTS + "/" + request.sandboxId().toLowerCase(Locale.ROOT);
    return engine.post("snapshot", "/commit?container=" + DockerEngine.q(request.providerResourceId())
        + "&repo=" + DockerEngine.q(repo) + "&tag=" + System.currentTimeMillis() + "&pause=true", new JsonObject(),
        Duration.ofMinutes(10)).compose(r -> {
          if (r.status() != 201 && r.status() != 200) {
            LOG.debug("docker commit failed: {}", DockerEngine.message(r));
            return Future.failedFuture(engine.statusFailure("snapshot", r, ErrorCode.COMMAND_FAILED));
          }
          String id = r.json().getString("Id", r.json().getString("id"));
          if (id == null) {
            return Future.failedFuture(engine.failure(ErrorCode.COMMAND_FAILED, "snapshot", false,
                ProviderError.Outcome.UNKNOWN, null));
          }
          return Future.succeededFuture(id.startsWith("sha256:") ? id : "sha256:" + id);
        });
  }

  /**
   * The image of a snapshot this organization took, by the whole id {@link #snapshot} answered (never a
   * prefix of one); anything else is not found.
   */
  private Future<String> snapshotImage(String snapshotId, String organizationId) {
    if (!SNAPSHOT_ID.matcher(snapshotId).matches()) {
      return Future.failedFuture(new ApiException(404, "snapshot not found"));
    }
    return engine.get("create", "/images/" + DockerEngine.q(snapshotId) + "/json", CALL).compose(r -> {
      JsonObject labels = r.ok() ? r.json().getJsonObject("Config", new JsonObject())
          .getJsonObject("Labels", new JsonObject()) : new JsonObject();
      if (labels == null || !organizationId.equals(labels.getString(ORGANIZATION))) {
        return Future.failedFuture(new ApiException(404, "snapshot not found"));
      }
      return Future.succeededFuture(snapshotId);
    });
  }
}
