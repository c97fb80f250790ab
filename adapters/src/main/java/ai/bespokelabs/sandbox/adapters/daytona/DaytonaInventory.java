package ai.bespokelabs.sandbox.adapters.daytona;

import static ai.bespokelabs.sandbox.adapters.daytona.DaytonaProvider.BACKEND;
import static ai.bespokelabs.sandbox.adapters.daytona.DaytonaProvider.LABEL_MANAGED;
import static ai.bespokelabs.sandbox.adapters.daytona.DaytonaProvider.LABEL_SANDBOX;

import ai.bespokelabs.sandbox.adapters.spi.Inventory;
import ai.bespokelabs.sandbox.core.bus.Messages.Resource;
import ai.bespokelabs.sandbox.core.pricing.PricingCatalog;
import io.vertx.core.Future;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.List;

/**
 * Reconciliation and health: the sandboxes carrying our {@code managed} label (cursor pages), and a one-item
 * authenticated list as the health check. Both work from Daytona's state alone, so they survive a restart.
 */
final class DaytonaInventory implements Inventory {
  private final DaytonaClient client;
  private final DaytonaSandboxes sandboxes;
  private final PricingCatalog pricing;
  private final Clock clock;

  /** @param pricing the catalog pricing {@link #list()}'s live cost estimate; null for no estimate */
  DaytonaInventory(DaytonaClient client, DaytonaSandboxes sandboxes, PricingCatalog pricing, Clock clock) {
    this.client = client;
    this.sandboxes = sandboxes;
    this.pricing = pricing;
    this.clock = clock;
  }

  /** One authenticated list call of at most one item. */
  @Override
  public Future<Void> checkHealth() {
    return client.expect("health", false, HttpMethod.GET, client.apiUrl() + "/sandbox?limit=1&labels="
        + DaytonaSandboxes.encode(new JsonObject().put(LABEL_MANAGED, "true").encode()), null).mapEmpty();
  }

  /**
   * The sandboxes carrying our {@code managed} label, each with its sandbox id label, its state as a
   * lifecycle status, and (with a pricing catalog) its cost so far: catalog rates × its cpu and memory ×
   * the time since it was created.
   */
  @Override
  public Future<List<Resource>> list() {
    return sandboxes.listByLabels(new JsonObject().put(LABEL_MANAGED, "true"), "list").map(found -> {
      List<Resource> out = new ArrayList<>();
      for (JsonObject s : found) {
        JsonObject labels = s.getJsonObject("labels", new JsonObject());
        String sandboxId = labels.getString(LABEL_SANDBOX);
        if (sandboxId == null || s.getString("id") == null) {
          continue;
        }
        out.add(new Resource(s.getString("id"), sandboxId, status(s.getString("state")), cost(s)));
      }
      return out;
    });
  }

  static String status(String state) {
    if (state == null || DaytonaSandboxes.PROVISIONING.contains(state)) {
      return "provisioning";
    }
    if (DaytonaSandboxes.STOPPED.contains(state)) {
      return "stopping";
    }
    if (DaytonaSandboxes.FAILED.contains(state)) {
      return "failed";
    }
    if (DaytonaSandboxes.GONE.contains(state)) {
      return "terminated";
    }
    return "running";
  }

  private BigDecimal cost(JsonObject s) {
    if (pricing == null || !(s.getValue("cpu") instanceof Number cpu)
        || !(s.getValue("memory") instanceof Number memGb) || s.getString("createdAt") == null) {
      return null;
    }
    try {
      Instant created = Instant.parse(s.getString("createdAt"));
      long secs = Math.max(0, Duration.between(created, clock.instant()).toSeconds());
      BigDecimal hourly = pricing.hourlyRate(BACKEND, cpu.doubleValue(), (int) Math.round(memGb.doubleValue() * 1024));
      return hourly.multiply(BigDecimal.valueOf(secs)).divide(BigDecimal.valueOf(3600), 6, RoundingMode.HALF_UP);
    } catch (DateTimeParseException | ClassCastException e) {
      return null;
    }
  }
}
