package ai.bespokelabs.sandbox.gateway.placement;

import ai.bespokelabs.sandbox.core.pricing.PricingCatalog;
import ai.bespokelabs.sandbox.core.repo.PolicyRepository;
import ai.bespokelabs.sandbox.core.repo.ProviderHealthRepository;
import ai.bespokelabs.sandbox.gateway.routing.Backends;
import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** Plans {@code backend: "auto"} for an organization from what this gateway knows now. */
public final class Placements {
  private final Backends backends;
  private final PolicyRepository policies;
  private final ProviderHealthRepository health;
  private final PricingCatalog pricing;

  public Placements(Backends backends, PolicyRepository policies, ProviderHealthRepository health,
      PricingCatalog pricing) {
    this.backends = backends;
    this.policies = policies;
    this.health = health;
    this.pricing = pricing;
  }

  /** Every backend this gateway serves, ranked or rejected for {@code req} (see {@link Placement#plan}). */
  public Future<List<Placement.Candidate>> plan(String organizationId, Placement.Requirements req) {
    return Future.all(policies.current(organizationId), health.all()).map(all -> {
      Map<String, JsonObject> checks = all.resultAt(1);
      List<Placement.Offer> offers = new ArrayList<>();
      for (String b : backends.names()) {
        JsonObject check = checks.get(b);
        offers.add(new Placement.Offer(b, backends.unavailable(b), backends.placement(b),
            check == null ? null : check.getString("status")));
      }
      return Placement.plan(req, offers, all.resultAt(0), pricing);
    });
  }
}
