package ai.bespokelabs.sandbox.gateway;

import ai.bespokelabs.sandbox.gateway.routing.Backends;
import ai.bespokelabs.sandbox.adapters.AdapterVerticle;
import ai.bespokelabs.sandbox.adapters.Unconfigured;
import ai.bespokelabs.sandbox.adapters.host.BlockingBackend;
import ai.bespokelabs.sandbox.adapters.spi.Backend;
import ai.bespokelabs.sandbox.adapters.spi.BackendFactory;
import ai.bespokelabs.sandbox.adapters.bwrap.BwrapWrapper;
import ai.bespokelabs.sandbox.adapters.docker.DockerProvider;
import ai.bespokelabs.sandbox.adapters.workspace.GitCloner;
import ai.bespokelabs.sandbox.adapters.workspace.Materializer;
import ai.bespokelabs.sandbox.adapters.safehouse.SafehouseWrapper;
import ai.bespokelabs.sandbox.adapters.local.HostUsers;
import ai.bespokelabs.sandbox.adapters.local.HostWrapper;
import ai.bespokelabs.sandbox.adapters.local.LocalProvider;
import ai.bespokelabs.sandbox.adapters.local.SandboxRoot;
import ai.bespokelabs.sandbox.adapters.local.Workdirs;
import ai.bespokelabs.sandbox.core.Hmac;
import ai.bespokelabs.sandbox.core.Times;
import ai.bespokelabs.sandbox.core.bus.Messages;
import ai.bespokelabs.sandbox.core.config.ConfigException;
import ai.bespokelabs.sandbox.core.config.GatewayConfig;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.config.ProviderSettings;
import ai.bespokelabs.sandbox.core.db.DataDirectoryLock;
import ai.bespokelabs.sandbox.core.db.Database;
import ai.bespokelabs.sandbox.core.db.Wakeups;
import ai.bespokelabs.sandbox.core.pricing.PricingCatalog;
import ai.bespokelabs.sandbox.supervisor.SupervisorVerticle;
import ai.bespokelabs.sandbox.core.log.LogContext;
import ai.bespokelabs.sandbox.gateway.ops.GatewayMetrics;
import ai.bespokelabs.sandbox.gateway.ops.MetricsServer;
import io.vertx.core.DeploymentOptions;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.sqlclient.Pool;
import java.time.Clock;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The composition root: resolves server identity, opens the database (embedded or external) and migrates
 * it, builds Vert.x, registers codecs and deploys adapters, ledger, supervisor and the HTTP verticles.
 * {@link #close()} stops accepting, lets in-flight requests finish, and closes the pool and the database.
 */
public final class Gateway implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(Gateway.class);

  private final GatewayConfig config;
  private final Vertx vertx;
  private final Pool pool;
  private final Database database;
  private final boolean secretsGenerated;
  private final SecretStore store;
  private final String httpDeployment;
  private final HostSandboxes hostSandboxes;
  private final DataDirectoryLock owner;
  private final Wiring wiring;
  /** Set when this node is a cluster member. */
  private final ClusterNode clusterNode;

  private Gateway(GatewayConfig config, Vertx vertx, Pool pool, Database database, boolean secretsGenerated,
      SecretStore store, String httpDeployment, HostSandboxes hostSandboxes, DataDirectoryLock owner, Wiring wiring,
      ClusterNode clusterNode) {
    this.clusterNode = clusterNode;
    this.wiring = wiring;
    this.httpDeployment = httpDeployment;
    this.hostSandboxes = hostSandboxes;
    this.owner = owner;
    this.config = config;
    this.vertx = vertx;
    this.pool = pool;
    this.database = database;
    this.secretsGenerated = secretsGenerated;
    this.store = store;
  }

  /**
   * Every backend this node offers: the host-process ones always, the others as their settings allow
   * (cloud providers only when their credentials are configured), each from the {@link BackendFactory} its
   * package registers. The host-process providers are also put in {@code hosted}, by name, for the node's
   * start-up and shutdown work on their sandboxes.
   */
  static List<Backend> backends(Vertx vertx, GatewayConfig config, Clock clock, Map<String, LocalProvider> hosted) {
    java.nio.file.Path data = config.node().dataDir();
    Workdirs workdirs = new Workdirs(config.execution().workdirRoots(), data);
    java.nio.file.Path sandboxes = SandboxRoot.choose(data, config.node().sandboxRoot(), HostUsers.detect().dropping());
    HostUsers users = HostUsers.detect().withUids(config.execution().sandboxUidFirst(),
        config.execution().sandboxUidCount(), config.execution().sandboxUidLocks());
    hosted.put(LocalProvider.BACKEND, new LocalProvider(LocalProvider.BACKEND, sandboxes.resolve("sandboxes"),
        clock, HostWrapper.NONE, workdirs, users));
    hosted.put(BwrapWrapper.BACKEND, new LocalProvider(BwrapWrapper.BACKEND, sandboxes.resolve("bwrap-sandboxes"),
        clock, new BwrapWrapper(config.cluster().tls().map(t -> List.of(t.key(), t.cert(), t.ca())).orElse(List.of())),
        workdirs, users));
    hosted.put(SafehouseWrapper.BACKEND, new LocalProvider(SafehouseWrapper.BACKEND,
        sandboxes.resolve("safehouse-sandboxes"), clock, new SafehouseWrapper(), workdirs, users));
    List<Backend> out = new java.util.ArrayList<>();
    hosted.values().forEach(p -> out.add(new BlockingBackend(p)));
    ProviderSettings settings = config.providers().settings();
    BackendFactory.Environment environment = new BackendFactory.Environment(vertx, settings, data, clock,
        PricingCatalog.load(config.ledger().pricingFile()));
    List<BackendFactory> factories = new java.util.ArrayList<>();
    java.util.ServiceLoader.load(ai.bespokelabs.sandbox.core.config.BackendSettings.class).forEach(s -> {
      if (s instanceof BackendFactory f) {
        factories.add(f);
      }
    });
    factories.sort(java.util.Comparator.comparing(BackendFactory::name));
    for (BackendFactory factory : factories) {
      add(out, factory.name(), factory.nodeBound(), () -> factory.create(environment));
    }
    return out;
  }

  /**
   * Adds the backend {@code build} makes (none when its settings are absent). Settings that cannot be read never
   * stop the gateway: the backend is listed as not configured with the reason, in one log line.
   */
  private static void add(List<Backend> out, String name, boolean nodeBound, Supplier<Optional<? extends Backend>> build) {
    try {
      build.get().ifPresent(out::add);
    } catch (ConfigException | ApiException e) {
      out.add(new Unconfigured(name, nodeBound, e.getMessage()));
    }
  }

  /**
   * Starts a gateway; blocks until it serves requests or fails. It holds its data directory's lock for its life:
   * a data directory another gateway runs on is a {@link ai.bespokelabs.sandbox.core.config.ConfigException}.
   */
  public static Gateway start(GatewayConfig initial, Clock clock) {
    DataDirectoryLock owner = DataDirectoryLock.acquire(initial.node().dataDir(), initial.http().port());
    try {
      return start(initial, clock, owner);
    } catch (RuntimeException | Error e) {
      owner.close();
      throw e;
    }
  }

  private static Gateway start(GatewayConfig initial, Clock clock, DataDirectoryLock owner) {
    SecretStore store = new SecretStore(initial.node().dataDir());
    SecretStore.Resolved pepper = store.resolve(initial.secrets().pepper(), SecretStore.PEPPER_FILE, 32);
    SecretStore.Resolved admin = store.resolve(initial.secrets().adminToken(), SecretStore.ADMIN_TOKEN_FILE, 32);
    String nodeId = initial.node().id().orElseGet(() -> store.resolve(Optional.empty(), SecretStore.NODE_ID_FILE, 8)
        .value().reveal().toLowerCase(java.util.Locale.ROOT).replaceAll("[^a-z0-9]", "x"));
    GatewayConfig config = initial.withSecrets(pepper.value(), admin.value()).withNodeId(nodeId);

    // a clustered node's certificate and key, checked before anything starts
    ClusterIdentity identity = config.cluster().enabled() ? ClusterIdentity.load(config.cluster()) : null;
    Database database = Database.open(config.database().url(), owner);
    GatewayMetrics metrics = new GatewayMetrics();
    Cluster[] cluster = new Cluster[1];
    Vertx vertx;
    try {
      vertx = Cluster.vertx(new VertxOptions().setPreferNativeTransport(true)
          .setMetricsOptions(GatewayMetrics.vertxOptions()), metrics.vertxFactory(), config.cluster(), identity, nodeId,
          joined -> cluster[0] = joined);
    } catch (RuntimeException e) {
      metrics.close();
      database.close();
      throw e;
    }
    Pool pool = database.pool(vertx, config.database().poolSize());
    String httpDeployment;
    HostSandboxes hostSandboxes;
    Wiring wiring;
    ClusterNode clusterNode;
    try {
      Messages.registerCodecs(vertx.eventBus());
      LogContext.carryOver(vertx.eventBus());
      Map<String, LocalProvider> hosted = new LinkedHashMap<>();
      List<Backend> providers = backends(vertx, config, clock, hosted);
      SandboxEgress.enforce(vertx, config, database.connectOptions().getHost(), hosted,
          providers.stream().filter(DockerProvider.class::isInstance).map(DockerProvider.class::cast).findFirst()
              .orElse(null),
          b -> config.providers().allowed().map(list -> list.contains(b)).orElse(true));
      Backends backends = Backends.of(providers, config.providers().allowed(), nodeId);
      if (backends.isEnabled(LocalProvider.BACKEND) && !loopbackOnly(config.http().host())) {
        LOG.warn("The local backend is enabled for every organization on a gateway reachable beyond this host"
            + " ({}): its programs run on the host with no isolation beyond an unprivileged uid. Leave it out of"
            + " BESPOKE_ALLOWED_BACKENDS or restrict it with organization policies unless every tenant is trusted.",
            config.http().host());
      }
      wiring = new Wiring(vertx, config, backends, clock, new Hmac(pepper.value()), pool,
          PricingCatalog.load(config.ledger().pricingFile()), new Wakeups(database.connectOptions()), metrics);
      Wiring w = wiring;

      hostSandboxes = new HostSandboxes(vertx, w.claims, w.terminations, w.nodeLoss, nodeId, hosted, () -> Times.now(clock));
      HostSandboxes ending = hostSandboxes;
      Future<?> deployed = Database.ping(pool).compose(v -> endLeftRunning(w, clock, nodeId))
          .compose(v -> ending.endAll(true))
          .compose(v -> ending.reapLost())
          .compose(v -> CacheInvalidations.listen(vertx, w.wakeups(), w.authenticator, w.policyHints, w.routes))
          .mapEmpty();
      for (Backend provider : providers) {
        if (backends.isEnabled(provider.name())) {
          deployed = deployed.compose(v -> vertx.deployVerticle(new AdapterVerticle(provider, nodeId,
              config.execution().journalBytes(),
              new Materializer(new GitCloner(config.execution().gitAllowFileUrls(), config.execution().gitAllowPrivate())))
              .countingFailures((backend, error) -> metrics.providerError(backend, error.code().wire()))
              .reportingUnavailable(reason -> backends.markUnavailable(provider.name(), reason))));
        }
      }
      SupervisorVerticle supervisor = w.supervisor(watches(backends));
      String[] supervising = new String[1];
      if (cluster[0] != null) {
        supervisor.handingOverWith(w.nodeLoss);
      }
      httpDeployment = deployed
          .compose(v -> vertx.deployVerticle(w.ledgerVerticle()))
          .compose(v -> vertx.deployVerticle(supervisor).onSuccess(id -> supervising[0] = id))
          .compose(v -> vertx.deployVerticle(w.recorder()))
          .compose(v -> config.operations().metricsPort().isEmpty() ? Future.succeededFuture()
              : vertx.deployVerticle(new MetricsServer(config.http().host(), config.operations().metricsPort().get(),
                  w.metricsEndpoint())))
          .compose(v -> vertx.deployVerticle(w::http, new DeploymentOptions().setInstances(config.http().instances())))
          .await(60, TimeUnit.SECONDS);
      clusterNode = cluster[0] == null ? null : ClusterNode.join(vertx, cluster[0], w, backends, supervisor,
          supervising[0], ending, clock).await(60, TimeUnit.SECONDS);
    } catch (Exception | Error e) {
      closeQuietly(vertx, 30);
      metrics.close();
      database.close();
      throw e instanceof RuntimeException re ? re : new IllegalStateException("gateway failed to start", e);
    }
    LOG.info("Gateway node {} listening on http://{}:{} (backends: {}, database: {}, transport: {}{})", nodeId,
        config.http().host(), config.http().port(), config.providers().allowed().map(Object::toString).orElse("all available"),
        database.isEmbedded() ? "embedded" : "external", vertx.isNativeTransportEnabled() ? "native" : "NIO",
        clusterNode == null ? "" : ", clustered at " + config.cluster().host() + ":" + config.cluster().port());
    return new Gateway(config, vertx, pool, database, pepper.generated() || admin.generated(), store,
        httpDeployment, hostSandboxes, owner, wiring, clusterNode);
  }

  /**
   * Before this node runs anything (and before its supervisor's first heartbeat): executions its previous
   * run left running can no longer end, so they end as failed now and the ledger meters them. Next, its
   * host-process sandboxes end ({@link HostSandboxes}).
   */
  private static Future<Void> endLeftRunning(Wiring w, Clock clock, String nodeId) {
    return w.executions.endLeftByNode(nodeId, Times.now(clock)).map(n -> {
      if (n > 0) {
        LOG.info("Ended {} execution(s) left running when this node last stopped", n);
      }
      return null;
    });
  }

  /** Every enabled backend, reconciled by this node: node-bound ones for their sandboxes on this node. */
  static List<SupervisorVerticle.Watch> watches(Backends backends) {
    return backends.names().stream()
        .map(b -> new SupervisorVerticle.Watch(b, backends.isNodeBound(b) ? backends.nodeId() : null)).toList();
  }

  public GatewayConfig config() {
    return config;
  }

  public Vertx vertx() {
    return vertx;
  }

  public Pool pool() {
    return pool;
  }

  /** The execution service of this node (streams, stdin, signals). */
  public ai.bespokelabs.sandbox.gateway.exec.ExecutionService executionService() {
    return wiring.executionService;
  }

  /** What this gateway was built from. */
  Wiring wiring() {
    return wiring;
  }

  /** Whether {@code host} binds the loopback interface only. */
  static boolean loopbackOnly(String host) {
    try {
      return java.net.InetAddress.getByName(host).isLoopbackAddress();
    } catch (java.net.UnknownHostException e) {
      return false;
    }
  }

  /** True when this start generated the pepper or the admin token (first run). */
  public boolean secretsGenerated() {
    return secretsGenerated;
  }

  public SecretStore secretStore() {
    return store;
  }

  /**
   * Graceful stop: the HTTP verticles go first (no new connections; requests in flight finish, within the
   * shutdown grace), then this node's host-process sandboxes end with reason {@code shutdown} (within the
   * grace again; what is left then is ended at the next start), then the other verticles (the ledger and
   * supervisor finish the pass in progress), then the pool and the embedded database. A cluster member drains
   * first ({@link ClusterNode#drain}: {@code /readyz} answers 503, no new node-hosted sandboxes, running
   * executions get up to {@code BESPOKE_DRAIN_SECS}); its supervisor hands its claims over as it stops, and
   * closing Vert.x leaves the cluster.
   */
  /**
   * The stop SIGTERM asks for: a single node drains too ({@code /readyz} 503, no new node-hosted sandboxes, its
   * running executions get up to {@code BESPOKE_DRAIN_SECS}), then {@link #close}. (Tests close at once.)
   */
  public void stop() {
    if (clusterNode == null) {
      ClusterNode.drain(wiring.backends(), wiring, config.cluster().drainSecs());
    }
    close();
  }

  @Override
  public void close() {
    if (clusterNode != null) {
      clusterNode.drain(config.cluster().drainSecs());
      clusterNode.handOver();
    }
    try {
      vertx.undeploy(httpDeployment).await(config.node().shutdownGraceSecs() + 5L, TimeUnit.SECONDS);
    } catch (Exception e) {
      LOG.warn("HTTP verticles did not stop within the grace period: {}", e.toString());
    }
    try {
      hostSandboxes.endAll(false).await(config.node().shutdownGraceSecs() + 5L, TimeUnit.SECONDS);
    } catch (Exception e) {
      LOG.warn("Host sandboxes did not all end within the grace period (the next start ends them): {}",
          e.toString());
    }
    for (String id : vertx.deploymentIDs()) {
      try {
        vertx.undeploy(id).await(30, TimeUnit.SECONDS);
      } catch (Exception e) {
        LOG.warn("A verticle did not stop cleanly: {}", e.toString());
      }
    }
    try {
      closeQuietly(vertx, 30L);
      wiring.metrics.close();
    } finally {
      try {
        database.close();
      } finally {
        owner.close();
      }
    }
  }

  private static void closeQuietly(Vertx vertx, long timeoutSecs) {
    try {
      vertx.close().await(timeoutSecs, TimeUnit.SECONDS);
    } catch (Exception e) {
      LOG.warn("Vert.x did not close cleanly: {}", e.toString());
    }
  }
}
