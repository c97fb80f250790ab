package ai.bespokelabs.sandbox.gateway.placement;

import ai.bespokelabs.sandbox.adapters.spi.PlacementFacts;
import ai.bespokelabs.sandbox.adapters.spi.PlacementFacts.Isolation;
import ai.bespokelabs.sandbox.core.model.Policy;
import ai.bespokelabs.sandbox.core.pricing.PricingCatalog;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;

/**
 * Where {@code backend: "auto"} puts a sandbox: every backend this gateway serves is a candidate, rejected with a
 * reason when it cannot honour the request (excluded, not configured, forbidden by the organization's policy,
 * unhealthy by its last check, too weakly isolated, lacking a GPU, an image or template kind, or network
 * isolation, or dearer than {@code max_hourly_usd}); those that fit are ranked by the hourly price the pricing
 * catalog gives for this request (the ledger's arithmetic), then by {@code prefer} order, then healthy before
 * unchecked, then the stronger isolation, then by name. Pure: the caller brings the facts.
 */
public final class Placement {
  /** What a request needs. Null fields ask for nothing. */
  public record Requirements(Double cpu, Integer memoryMb, String gpu, String image, String template,
      Boolean allowInternet, Integer timeoutSecs, Isolation isolation, BigDecimal maxHourlyUsd, List<String> prefer,
      List<String> exclude) {
    public Requirements {
      prefer = prefer == null ? List.of() : List.copyOf(prefer);
      exclude = exclude == null ? List.of() : List.copyOf(exclude);
    }
  }

  /** One backend's part in the decision. */
  public record Candidate(String backend, BigDecimal hourlyUsd, String status, String reason) {
    public static final String CHOSEN = "chosen";
    public static final String REJECTED = "rejected";
    public static final String FAILED = "failed";
    public static final String NOT_TRIED = "not_tried";

    public Candidate with(String status, String reason) {
      return new Candidate(backend, hourlyUsd, status, reason);
    }

    public JsonObject toJson() {
      return new JsonObject().put("backend", backend)
          .put("hourly_usd", hourlyUsd == null ? null : hourlyUsd.stripTrailingZeros().toPlainString())
          .put("status", status).put("reason", reason);
    }
  }

  /** What this gateway knows of one backend: whether it can serve at all, its facts, its last health status. */
  public record Offer(String backend, Optional<String> unavailable, PlacementFacts facts, String health) {}

  private Placement() {}

  /**
   * The candidates in the order they are tried (those that fit, as {@link Candidate#NOT_TRIED}, ranked), then
   * those rejected, with the reason, in name order.
   */
  public static List<Candidate> plan(Requirements req, List<Offer> offers, Policy policy, PricingCatalog pricing) {
    List<Candidate> fitting = new ArrayList<>();
    List<Candidate> rejected = new ArrayList<>();
    Map<String, String> health = new java.util.HashMap<>();
    Map<String, Isolation> isolation = new java.util.HashMap<>();
    for (Offer o : offers) {
      health.put(o.backend(), o.health());
      isolation.put(o.backend(), o.facts().isolation());
      BigDecimal price = price(o.backend(), req, pricing);
      Optional<String> why = rejection(req, o, policy, price, pricing);
      Candidate c = new Candidate(o.backend(), price, why.isPresent() ? Candidate.REJECTED : Candidate.NOT_TRIED,
          why.orElse(null));
      (why.isPresent() ? rejected : fitting).add(c);
    }
    Function<Candidate, Integer> preference = c -> {
      int i = req.prefer().indexOf(c.backend());
      return i < 0 ? Integer.MAX_VALUE : i;
    };
    fitting.sort(Comparator.comparing(Candidate::hourlyUsd)
        .thenComparing(preference)
        .thenComparing(c -> "healthy".equals(health.get(c.backend())) ? 0 : 1)
        .thenComparing(c -> -isolation.get(c.backend()).ordinal())
        .thenComparing(Candidate::backend));
    rejected.sort(Comparator.comparing(Candidate::backend));
    List<Candidate> all = new ArrayList<>(fitting);
    all.addAll(rejected);
    return all;
  }

  /** The hourly price of the request on {@code backend}: its CPU and memory, plus its GPU; null when unpriced. */
  static BigDecimal price(String backend, Requirements req, PricingCatalog pricing) {
    BigDecimal base = pricing.hourlyRate(backend, req.cpu(), req.memoryMb());
    if (req.gpu() == null) {
      return base;
    }
    BigDecimal gpu = pricing.gpuHourlyRate(backend, req.gpu());
    return gpu == null ? null : base.add(gpu);
  }

  private static Optional<String> rejection(Requirements req, Offer o, Policy policy, BigDecimal price,
      PricingCatalog pricing) {
    PlacementFacts f = o.facts();
    if (req.exclude().contains(o.backend())) {
      return Optional.of("excluded by the request");
    }
    if (o.unavailable().isPresent()) {
      return Optional.of("not configured: " + o.unavailable().get());
    }
    if (policy.allowedBackends() != null && !policy.allowedBackends().contains(o.backend())) {
      return Optional.of("not allowed by the organization's policy");
    }
    if (req.gpu() != null && policy.allowedGpuTypes() != null && !policy.allowedGpuTypes().contains(req.gpu())) {
      return Optional.of("GPU type " + req.gpu() + " is not allowed by the organization's policy");
    }
    if (req.timeoutSecs() != null && policy.maxSandboxLifetimeSecs() != null
        && req.timeoutSecs() > policy.maxSandboxLifetimeSecs()) {
      return Optional.of("timeout_secs exceeds the organization's max_sandbox_lifetime_secs");
    }
    if ("unhealthy".equals(o.health())) {
      return Optional.of("unhealthy at its last health check");
    }
    if (req.isolation() != null && f.isolation().compareTo(req.isolation()) < 0) {
      return Optional.of("isolation " + f.isolation().wire() + " is below the requested " + req.isolation().wire());
    }
    if (req.gpu() != null && !f.gpus()) {
      return Optional.of("offers no GPUs");
    }
    if (req.gpu() != null && price == null) {
      return Optional.of("the pricing catalog has no price for a " + req.gpu() + " GPU on it");
    }
    if (req.image() != null && !f.images()) {
      return Optional.of("does not run images (image was given)");
    }
    if (req.template() != null && !f.templates()) {
      return Optional.of("has no templates (template was given)");
    }
    if (Boolean.FALSE.equals(req.allowInternet()) && !f.networkIsolation()) {
      return Optional.of("cannot cut a sandbox off the internet (allow_internet is false)");
    }
    if (req.maxHourlyUsd() != null && price != null && price.compareTo(req.maxHourlyUsd()) > 0) {
      return Optional.of("costs " + price.stripTrailingZeros().toPlainString() + " $/h, above max_hourly_usd "
          + req.maxHourlyUsd().stripTrailingZeros().toPlainString());
    }
    return Optional.empty();
  }

  /** The sandbox's record of the decision. */
  public static JsonObject record(String chosen, List<Candidate> candidates) {
    JsonArray all = new JsonArray();
    candidates.forEach(c -> all.add(c.toJson()));
    return new JsonObject().put("requested", "auto").put("chosen", chosen).put("candidates", all);
  }
}
