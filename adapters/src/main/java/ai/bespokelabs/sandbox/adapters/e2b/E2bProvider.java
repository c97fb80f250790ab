package ai.bespokelabs.sandbox.adapters.e2b;

import ai.bespokelabs.sandbox.adapters.ProviderMarks;
import ai.bespokelabs.sandbox.adapters.spi.Backend;
import ai.bespokelabs.sandbox.adapters.spi.Capability;
import ai.bespokelabs.sandbox.adapters.spi.Executions;
import ai.bespokelabs.sandbox.adapters.spi.FileSystem;
import ai.bespokelabs.sandbox.adapters.spi.Inventory;
import ai.bespokelabs.sandbox.adapters.spi.Lifecycle;
import ai.bespokelabs.sandbox.adapters.spi.Metrics;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.util.EnumSet;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * The {@code e2b} backend: E2B's control plane for sandboxes and, inside each sandbox, envd for processes
 * (Connect RPC, JSON codec) and files (REST). Plain HTTP through the Vert.x clients, no SDK, and no thread
 * ever waits: every call runs on the adapter's context and completes from the clients' answers. Node
 * independent: every operation works from the E2B sandbox id alone (the envd access token is fetched again
 * after a restart), so any node can serve any E2B sandbox.
 */
public final class E2bProvider implements Backend {
  private final Parts parts;
  public static final String BACKEND = "e2b";
  /** Metadata keys stamped on every sandbox (E2B metadata is a flat string map). */
  static final String META_SCOPE = ProviderMarks.SCOPE;
  static final String META_SANDBOX = ProviderMarks.SANDBOX_ID;
  static final String META_ORG = ProviderMarks.ORGANIZATION_ID;
  static final String META_TOKEN = ProviderMarks.CREATE_TOKEN;
  /** An E2B sandbox outlives the gateway's own deadline by this much; the supervisor ends it first. */
  static final int DEADLINE_GRACE_SECS = 60;
  /** Reconciliation reads at most this many pages of 100 sandboxes. */
  static final int MAX_LIST_PAGES = 100;

  private final E2bClient client;
  private final E2bLifecycle lifecycle;
  private final E2bExecutions executions;
  private final E2bFiles files;
  private final E2bMetrics metrics;

  public E2bProvider(Vertx vertx, E2bSettings settings, Clock clock) {
    this.client = new E2bClient(vertx, settings);
    this.lifecycle = new E2bLifecycle(client);
    this.executions = new E2bExecutions(client);
    this.files = new E2bFiles(client, executions);
    this.metrics = new E2bMetrics(client, clock);
    this.parts = new Parts(lifecycle, executions, lifecycle, files, metrics);
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
  public boolean nodeBound() {
    return false;
  }

  @Override
  public ai.bespokelabs.sandbox.adapters.spi.PlacementFacts placement() {
    return new ai.bespokelabs.sandbox.adapters.spi.PlacementFacts(
        ai.bespokelabs.sandbox.adapters.spi.PlacementFacts.Isolation.VM, false, false, true, true);
  }

  @Override
  public Set<Capability> capabilities() {
    return EnumSet.of(Capability.FILES, Capability.METRICS, Capability.ADOPT, Capability.PROVIDER_TIMEOUT);
  }

  /** E2B's metadata filter: {@code k=v&k2=v2} with each key and value URL-encoded. */
  static String metadataQuery(Map<String, String> metadata) {
    StringBuilder b = new StringBuilder();
    new TreeMap<>(metadata).forEach((k, v) -> {
      if (!b.isEmpty()) {
        b.append('&');
      }
      b.append(URLEncoder.encode(k, StandardCharsets.UTF_8)).append('=')
          .append(URLEncoder.encode(v, StandardCharsets.UTF_8));
    });
    return b.toString();
  }

  /** Abandons running executions (their sinks get no result) and closes the HTTP clients. */
  @Override
  public Future<Void> close() {
    executions.abandonAll();
    return client.close();
  }
}
