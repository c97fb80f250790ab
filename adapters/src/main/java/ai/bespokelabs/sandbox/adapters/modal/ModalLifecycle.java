package ai.bespokelabs.sandbox.adapters.modal;

import static ai.bespokelabs.sandbox.adapters.modal.ModalProvider.TAG_ORG;
import static ai.bespokelabs.sandbox.adapters.modal.ModalProvider.TAG_SANDBOX;
import static ai.bespokelabs.sandbox.adapters.modal.ModalProvider.TAG_TOKEN;

import ai.bespokelabs.sandbox.adapters.spi.Inventory;
import ai.bespokelabs.sandbox.adapters.spi.Lifecycle;
import ai.bespokelabs.sandbox.adapters.spi.SnapshotIds;
import ai.bespokelabs.sandbox.core.bus.Messages.CreateSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.DestroySandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.Resource;
import ai.bespokelabs.sandbox.core.bus.Messages.SandboxDestroyed;
import ai.bespokelabs.sandbox.core.bus.Messages.SnapshotSandbox;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import ai.bespokelabs.sandbox.core.error.ProviderError.Outcome;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import ai.bespokelabs.sandbox.core.model.SandboxConfig;
import ai.bespokelabs.sandbox.core.pricing.PricingCatalog;
import io.vertx.core.Future;
import java.math.BigDecimal;
import java.math.MathContext;
import java.math.RoundingMode;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import modal.client.Api;
import modal.client.Api.GenericResult.GenericStatus;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Modal's sandboxes: create (app, image, ephemeral secret, then {@code SandboxCreate} with our tags), terminate,
 * file-system snapshot, adoption, listing ours for reconciliation and the health check.
 */
final class ModalLifecycle implements Lifecycle, Inventory {
  private static final Logger LOG = LoggerFactory.getLogger(ModalLifecycle.class);
  /** A Modal sandbox outlives the gateway's own deadline by this much; the supervisor ends it first. */
  static final int DEADLINE_GRACE_SECS = 60;
  /** Modal's longest sandbox lifetime (24 h). */
  static final int MAX_TIMEOUT_SECS = 86_400;
  /** What a sandbox runs until it is terminated (as Modal's SDKs do when given no command). */
  static final List<String> ENTRYPOINT = List.of("sleep", "48h");
  /** Reconciliation reads at most this many pages. */
  static final int MAX_LIST_PAGES = 100;
  static final int SNAPSHOT_TIMEOUT_SECS = 55;

  static final BigDecimal NANOS_PER_HOUR = BigDecimal.valueOf(3_600_000_000_000L);

  private final ModalClient client;
  private final ModalSettings settings;
  private final PricingCatalog pricing;
  /** Modal image ids, as {@code SandboxSnapshotFs} answers them. */
  private static final Pattern IMAGE_ID = Pattern.compile("im-[A-Za-z0-9]{1,64}");
  private final SnapshotIds snapshotIds;

  /** @param pricing the catalog pricing the usage {@link #list()} reports; null for no cost */
  ModalLifecycle(ModalClient client, PricingCatalog pricing) {
    this.client = client;
    this.settings = client.settings();
    this.pricing = pricing;
    this.snapshotIds = new SnapshotIds("modal", IMAGE_ID, settings.tokenSecret());
  }

  /**
   * App, image (a registry reference built as {@code FROM <ref>}, waiting for Modal to build it within the
   * create timeout, or the snapshot's image id), env as an ephemeral secret, then {@code SandboxCreate}.
   * Everything the request asks for is validated first: a setting Modal has no equivalent for is 422 before any
   * call. When the create's answer is lost, the sandboxes carrying its create token are terminated and the error
   * reports {@code cleanup_status}.
   */
  @Override
  public Future<String> create(CreateSandbox request) {
    SandboxConfig c = request.config();
    Api.Resources resources;
    String snapshotImage;
    try {
      resources = ModalResources.of(c);
      snapshotImage = c.snapshotId() == null || c.snapshotId().isBlank() ? null
          : snapshotIds.resolve(c.snapshotId(), request.organizationId());
    } catch (ApiException e) {
      return Future.failedFuture(e);
    }
    String appName = c.appName() != null && !c.appName().isBlank() ? c.appName() : settings.appName();
    long deadline = System.nanoTime() + settings.createTimeout().toNanos();
    return client.app(appName, "create").compose(appId -> image(c, snapshotImage, appId, deadline).compose(imageId -> secret(c, appId)
        .compose(secretId -> {
          Api.Sandbox.Builder def = Api.Sandbox.newBuilder().addAllEntrypointArgs(ENTRYPOINT).setImageId(imageId)
              .setResources(resources).setTimeoutSecs(timeout(c)).setEnableSnapshot(true)
              .setNetworkAccess(Api.NetworkAccess.newBuilder().setNetworkAccessType(
                  Boolean.FALSE.equals(c.allowInternet()) ? Api.NetworkAccess.NetworkAccessType.BLOCKED
                      : Api.NetworkAccess.NetworkAccessType.OPEN));
          if (secretId != null) {
            def.addSecretIds(secretId);
          }
          Api.SandboxCreateRequest create = Api.SandboxCreateRequest.newBuilder().setAppId(appId).setDefinition(def)
              .addTags(tag(TAG_SANDBOX, request.sandboxId())).addTags(tag(TAG_ORG, request.organizationId()))
              .addTags(tag(TAG_TOKEN, request.createToken())).build();
          return client.call("SandboxCreate", create, Api.SandboxCreateResponse.getDefaultInstance(), "create")
              .transform(ar -> {
                if (ar.succeeded() && !ar.result().getSandboxId().isBlank()) {
                  return Future.succeededFuture(ar.result().getSandboxId());
                }
                Throwable mapped = ar.succeeded() ? null : ModalErrors.map(ar.cause(), "create");
                if (mapped != null && !(mapped instanceof ProviderException)) {
                  return Future.failedFuture(mapped);
                }
                ProviderError failure = mapped == null
                    ? ProviderError.of(ErrorCode.CREATION_FAILED, ModalProvider.BACKEND, "create", false, Outcome.UNKNOWN)
                    : ((ProviderException) mapped).error();
                return failure.outcome() == Outcome.UNKNOWN ? cleanUp(request, appId, failure)
                    : Future.failedFuture(mapped != null ? mapped : new ProviderException(failure));
              });
        })));
  }

  private int timeout(SandboxConfig c) {
    int secs = c.timeoutSecs() == null ? settings.sandboxTimeoutSecs() : c.timeoutSecs() + DEADLINE_GRACE_SECS;
    return Math.min(MAX_TIMEOUT_SECS, secs);
  }

  static Api.SandboxTag tag(String name, String value) {
    return Api.SandboxTag.newBuilder().setTagName(name).setTagValue(value == null ? "" : value).build();
  }

  /**
   * The image id: the snapshot's, else the registry reference's ({@code ImageGetOrCreate}), once Modal has built
   * it ({@link ModalImageBuild}: a first use of an image waits for its build, until {@code deadline}).
   */
  private Future<String> image(SandboxConfig c, String snapshotImage, String appId, long deadline) {
    if (snapshotImage != null) {
      return Future.succeededFuture(snapshotImage);
    }
    String ref = c.image() != null && !c.image().isBlank() ? c.image() : settings.image();
    Api.ImageGetOrCreateRequest req = Api.ImageGetOrCreateRequest.newBuilder().setAppId(appId)
        .setImage(Api.Image.newBuilder().addDockerfileCommands("FROM " + ref)).build();
    return client.call("ImageGetOrCreate", req, Api.ImageGetOrCreateResponse.getDefaultInstance(), "create")
        .compose(r -> ModalImageBuild.await(client, ref, r, deadline));
  }

  /** The env as an ephemeral secret ({@code SecretGetOrCreate}), or null without env. */
  private Future<String> secret(SandboxConfig c, String appId) {
    Map<String, String> env = c.envVars();
    if (env == null || env.isEmpty()) {
      return Future.succeededFuture(null);
    }
    Api.SecretGetOrCreateRequest.Builder b = Api.SecretGetOrCreateRequest.newBuilder()
        .setObjectCreationType(Api.ObjectCreationType.OBJECT_CREATION_TYPE_EPHEMERAL).putAllEnvDict(env);
    if (settings.environment() != null) {
      b.setEnvironmentName(settings.environment());
    }
    return client.call("SecretGetOrCreate", b.build(), Api.SecretGetOrCreateResponse.getDefaultInstance(), "create")
        .map(Api.SecretGetOrCreateResponse::getSecretId);
  }

  /**
   * A create whose outcome is unknown: the sandboxes tagged with its create token are terminated. The failure
   * keeps its code; a confirmed cleanup makes it retryable with outcome {@code failed}.
   */
  private Future<String> cleanUp(CreateSandbox request, String appId, ProviderError failure) {
    return listing(appId, List.of(tag(TAG_TOKEN, request.createToken())), 1)
        .compose(found -> terminateAll(found, "create").map(any -> found.isEmpty() ? "not_found" : "deleted"))
        .otherwise("unknown")
        .compose(cleanup -> {
          LOG.warn("modal create of sandbox {} had no usable answer ({}); cleanup by create token: {}",
              request.sandboxId(), failure.code().wire(), cleanup);
          ProviderError out = "deleted".equals(cleanup)
              ? new ProviderError(failure.code(), ModalProvider.BACKEND, "create", true, Outcome.FAILED, failure.context())
              : new ProviderError(failure.code(), ModalProvider.BACKEND, "create", false, Outcome.UNKNOWN,
                  failure.context());
          return Future.failedFuture(new ProviderException(out.withContext("cleanup_status", cleanup)));
        });
  }

  /** {@code SandboxTerminate}; without a resource id, the sandboxes tagged with the sandbox id. */
  @Override
  public Future<SandboxDestroyed> destroy(DestroySandbox request) {
    String id = request.providerResourceId();
    if (id == null || id.isBlank()) {
      return client.app(settings.appName(), "destroy")
          .compose(appId -> listing(appId, List.of(tag(TAG_SANDBOX, request.sandboxId())), 1))
          .compose(found -> terminateAll(found, "destroy"))
          .map(any -> new SandboxDestroyed(!any));
    }
    return terminate(id, "destroy").map(done -> new SandboxDestroyed(!done));
  }

  private Future<Boolean> terminateAll(List<Api.SandboxInfo> sandboxes, String op) {
    Future<Boolean> any = Future.succeededFuture(false);
    for (Api.SandboxInfo s : sandboxes) {
      any = any.compose(before -> terminate(s.getId(), op).map(done -> before | done));
    }
    return any;
  }

  /** True when Modal terminated it now; false when it was gone or had already ended. */
  private Future<Boolean> terminate(String id, String op) {
    client.forgetRouter(id);
    return client.call("SandboxTerminate", Api.SandboxTerminateRequest.newBuilder().setSandboxId(id).build(),
        Api.SandboxTerminateResponse.getDefaultInstance(), op).transform(ar -> {
          if (ar.succeeded()) {
            return Future.succeededFuture(!ar.result().hasExistingResult());
          }
          if (ar.cause() instanceof ProviderException p && p.error().code() == ErrorCode.NOT_FOUND) {
            return Future.succeededFuture(false);
          }
          return Future.failedFuture(ar.cause());
        });
  }

  /**
   * Checks that the sandbox still runs in its app and carries this sandbox's and organization's tags
   * ({@code SandboxList} filtered by them); else {@code not_found}.
   */
  @Override
  public Future<String> adopt(CreateSandbox request, String resourceId) {
    if (resourceId == null || resourceId.isBlank()) {
      return Future.failedFuture(ModalErrors.of(ErrorCode.NOT_FOUND, "adopt", false, Outcome.FAILED));
    }
    SandboxConfig c = request.config();
    String appName = c != null && c.appName() != null && !c.appName().isBlank() ? c.appName() : settings.appName();
    List<Api.SandboxTag> ours = List.of(tag(TAG_SANDBOX, request.sandboxId()), tag(TAG_ORG, request.organizationId()));
    return client.app(appName, "adopt").compose(appId -> listing(appId, ours, MAX_LIST_PAGES)).compose(found -> {
      if (found.stream().noneMatch(s -> s.getId().equals(resourceId))) {
        return Future.failedFuture(ModalErrors.of(ErrorCode.NOT_FOUND, "adopt", false, Outcome.FAILED));
      }
      return Future.succeededFuture(resourceId);
    });
  }

  /**
   * {@code SandboxSnapshotFs}: the image id, handed out bound to the organization ({@link SnapshotIds}: Modal
   * images carry no label we could check), which {@code snapshot_id} accepts at create for that organization.
   */
  @Override
  public Future<String> snapshot(SnapshotSandbox request) {
    Api.SandboxSnapshotFsRequest req = Api.SandboxSnapshotFsRequest.newBuilder()
        .setSandboxId(request.providerResourceId()).setTimeout(SNAPSHOT_TIMEOUT_SECS).build();
    return client.call("SandboxSnapshotFs", req, Api.SandboxSnapshotFsResponse.getDefaultInstance(), "snapshot")
        .compose(r -> {
          if (r.getImageId().isBlank()
              || r.hasResult() && r.getResult().getStatus() != GenericStatus.GENERIC_STATUS_SUCCESS) {
            return Future.failedFuture(ModalErrors.of(ErrorCode.COMMAND_FAILED, "snapshot", false, Outcome.FAILED));
          }
          return Future.succeededFuture(snapshotIds.handOut(request.organizationId(), r.getImageId()));
        });
  }

  // ---- inventory ---------------------------------------------------------------------------------------------

  /** A cheap authenticated call: the default app's id ({@code AppGetOrCreate}, which the token must allow). */
  @Override
  public Future<Void> checkHealth() {
    Api.AppGetOrCreateRequest.Builder b = Api.AppGetOrCreateRequest.newBuilder().setAppName(settings.appName())
        .setObjectCreationType(Api.ObjectCreationType.OBJECT_CREATION_TYPE_CREATE_IF_MISSING);
    if (settings.environment() != null) {
      b.setEnvironmentName(settings.environment());
    }
    return client.call("AppGetOrCreate", b.build(), Api.AppGetOrCreateResponse.getDefaultInstance(), "health")
        .mapEmpty();
  }

  /**
   * The default app's running sandboxes that carry our sandbox-id tag, each with its cost so far when a pricing
   * catalog is given: the CPU, memory and GPU time Modal reports it used ({@code SandboxGetResourceUsage}) at the
   * catalog's rates; no cost when that call fails.
   */
  @Override
  public Future<List<Resource>> list() {
    return client.app(settings.appName(), "list").compose(appId -> listing(appId, List.of(), MAX_LIST_PAGES))
        .compose(found -> {
          List<Future<Resource>> out = new ArrayList<>();
          for (Api.SandboxInfo s : found) {
            s.getTagsList().stream().filter(t -> TAG_SANDBOX.equals(t.getTagName())).findFirst()
                .ifPresent(t -> out.add(cost(s.getId()).map(usd -> new Resource(s.getId(), t.getTagValue(),
                    "running", usd))));
          }
          return Future.all(out).map(all -> out.stream().map(Future::result).toList());
        });
  }

  /**
   * The sandbox's cost so far from its reported usage: CPU and memory at the catalog's rates, GPU time at the
   * catalog's rate for the GPU type Modal reports. Null without a catalog or an answer, and when GPU time was
   * used on a type the catalog does not price (no cost rather than too low a one).
   */
  private Future<BigDecimal> cost(String sandboxId) {
    if (pricing == null) {
      return Future.succeededFuture(null);
    }
    return client.call("SandboxGetResourceUsage", Api.SandboxGetResourceUsageRequest.newBuilder()
        .setSandboxId(sandboxId).build(), Api.SandboxGetResourceUsageResponse.getDefaultInstance(), "list")
        .map(u -> {
          BigDecimal usd = pricing.hourlyRate(ModalProvider.BACKEND, 1.0, 0).multiply(hours(u.getCpuCoreNanosecs()))
              .add(pricing.hourlyRate(ModalProvider.BACKEND, 0.0, 1024).multiply(hours(u.getMemGibNanosecs())));
          if (u.getGpuNanosecs() != 0) {
            BigDecimal gpu = pricing.gpuHourlyRate(ModalProvider.BACKEND, u.hasGpuType()
                ? u.getGpuType().toUpperCase(java.util.Locale.ROOT) : null);
            if (gpu == null) {
              LOG.warn("modal sandbox {} used GPU time on a type the pricing catalog does not price", sandboxId);
              return null;
            }
            usd = usd.add(gpu.multiply(hours(u.getGpuNanosecs())));
          }
          return usd.setScale(9, RoundingMode.HALF_UP).stripTrailingZeros();
        })
        .otherwiseEmpty();
  }

  /** Unsigned nanoseconds (core-, GiB- or GPU-) in hours. */
  private static BigDecimal hours(long nanos) {
    return new BigDecimal(Long.toUnsignedString(nanos)).divide(NANOS_PER_HOUR, MathContext.DECIMAL64);
  }

  /** {@code SandboxList} of running sandboxes with all of {@code tags}, paged by creation time. */
  private Future<List<Api.SandboxInfo>> listing(String appId, List<Api.SandboxTag> tags, int pages) {
    return page(appId, tags, 0, pages, new ArrayList<>());
  }

  private Future<List<Api.SandboxInfo>> page(String appId, List<Api.SandboxTag> tags, double before, int left,
      List<Api.SandboxInfo> out) {
    if (left == 0) {
      LOG.warn("modal listing stopped after {} pages", MAX_LIST_PAGES);
      return Future.succeededFuture(out);
    }
    Api.SandboxListRequest.Builder b = Api.SandboxListRequest.newBuilder().setAppId(appId).addAllTags(tags)
        .setIncludeFinished(false).setBeforeTimestamp(before);
    if (settings.environment() != null) {
      b.setEnvironmentName(settings.environment());
    }
    return client.call("SandboxList", b.build(), Api.SandboxListResponse.getDefaultInstance(), "list").compose(r -> {
      if (r.getSandboxesCount() == 0) {
        return Future.succeededFuture(out);
      }
      out.addAll(r.getSandboxesList());
      double oldest = r.getSandboxesList().stream().mapToDouble(Api.SandboxInfo::getCreatedAt).min().orElse(0);
      return oldest <= 0 || oldest == before ? Future.succeededFuture(out) : page(appId, tags, oldest, left - 1, out);
    });
  }
}
