package ai.bespokelabs.sandbox.gateway.placement;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.core.model.Policy;
import ai.bespokelabs.sandbox.core.pricing.PricingCatalog;
import ai.bespokelabs.sandbox.gateway.placement.Placement.Candidate;
import ai.bespokelabs.sandbox.adapters.spi.PlacementFacts;
import ai.bespokelabs.sandbox.adapters.spi.PlacementFacts.Isolation;
import ai.bespokelabs.sandbox.gateway.placement.Placement.Offer;
import ai.bespokelabs.sandbox.gateway.placement.Placement.Requirements;
import java.math.BigDecimal;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class PlacementTest {
  /** e2b: 0.083 $ per vCPU-hour, memory included; daytona: 0.036 per vCPU-hour + 0.018 per GiB-hour. */
  static final PricingCatalog PRICES = new PricingCatalog("test", Map.of(
      "e2b", new PricingCatalog.Rates(new BigDecimal("0.083"), BigDecimal.ZERO),
      "daytona", new PricingCatalog.Rates(new BigDecimal("0.036"), new BigDecimal("0.018")),
      "modal", new PricingCatalog.Rates(new BigDecimal("0.05"), new BigDecimal("0.01"))),
      Map.of("modal", Map.of("A100", new BigDecimal("2.5"))));
  static final PlacementFacts VM = new PlacementFacts(Isolation.VM, false, false, true, true);
  static final PlacementFacts DAYTONA = new PlacementFacts(Isolation.VM, false, true, false, true);
  static final PlacementFacts PROCESS = new PlacementFacts(Isolation.PROCESS, false, false, false, false);
  static final PlacementFacts CONTAINER_GPU = new PlacementFacts(Isolation.CONTAINER, true, true, false, true);

  static List<Offer> offers() {
    return List.of(new Offer("e2b", Optional.empty(), VM, "healthy"),
        new Offer("daytona", Optional.empty(), DAYTONA, null),
        new Offer("local", Optional.empty(), PROCESS, "healthy"),
        new Offer("modal", Optional.of("set MODAL_TOKEN_ID and MODAL_TOKEN_SECRET"), CONTAINER_GPU, null));
  }

  static Requirements req(Integer memoryMb, Isolation isolation) {
    return new Requirements(1.0, memoryMb, null, null, null, null, null, isolation, null, null, null);
  }

  static List<String> order(List<Candidate> plan) {
    return plan.stream().map(c -> c.backend() + ":" + c.status()).toList();
  }

  @Test
  void the_cheapest_fitting_backend_comes_first_and_isolation_and_memory_move_the_choice() {
    assertThat(order(Placement.plan(req(1024, null), offers(), Policy.DEFAULT, PRICES)))
        .containsExactly("local:not_tried", "daytona:not_tried", "e2b:not_tried", "modal:rejected");
    List<Candidate> vm = Placement.plan(req(1024, Isolation.VM), offers(), Policy.DEFAULT, PRICES);
    assertThat(order(vm)).containsExactly("daytona:not_tried", "e2b:not_tried", "local:rejected", "modal:rejected");
    assertThat(vm.get(0).hourlyUsd()).isEqualByComparingTo("0.054");
    assertThat(vm.get(2).reason()).isEqualTo("isolation process is below the requested vm");
    assertThat(vm.get(3).reason()).isEqualTo("not configured: set MODAL_TOKEN_ID and MODAL_TOKEN_SECRET");
    // 4 GiB on daytona is 0.108 $/h, e2b stays 0.083
    assertThat(order(Placement.plan(req(4096, Isolation.VM), offers(), Policy.DEFAULT, PRICES)).get(0))
        .isEqualTo("e2b:not_tried");
  }

  @Test
  void policy_health_price_cap_gpu_image_template_and_network_reject_with_reasons() {
    Policy onlyE2b = new Policy(null, null, null, List.of("e2b"), null, 600, 2, null, null);
    List<Candidate> p = Placement.plan(req(1024, null), offers(), onlyE2b, PRICES);
    assertThat(p.get(0).backend()).isEqualTo("e2b");
    assertThat(p).filteredOn(c -> c.backend().equals("daytona")).singleElement()
        .extracting(Candidate::reason).isEqualTo("not allowed by the organization's policy");
    Requirements longLived = new Requirements(1.0, 1024, null, null, null, null, 3600, null, null, null, null);
    assertThat(Placement.plan(longLived, offers(), onlyE2b, PRICES)).filteredOn(c -> c.backend().equals("e2b"))
        .singleElement().extracting(Candidate::reason).isEqualTo("timeout_secs exceeds the organization's max_sandbox_lifetime_secs");

    List<Offer> sick = List.of(new Offer("e2b", Optional.empty(), VM, "unhealthy"),
        new Offer("daytona", Optional.empty(), DAYTONA, "healthy"));
    assertThat(Placement.plan(req(1024, null), sick, Policy.DEFAULT, PRICES).get(1).reason())
        .isEqualTo("unhealthy at its last health check");

    Requirements capped = new Requirements(1.0, 1024, null, null, null, null, null, Isolation.VM,
        new BigDecimal("0.06"), null, null);
    assertThat(order(Placement.plan(capped, offers(), Policy.DEFAULT, PRICES))).startsWith("daytona:not_tried",
        "e2b:rejected");
    assertThat(Placement.plan(capped, offers(), Policy.DEFAULT, PRICES).get(1).reason())
        .isEqualTo("costs 0.083 $/h, above max_hourly_usd 0.06");

    Requirements gpu = new Requirements(1.0, 1024, "A100", null, null, null, null, null, null, null, null);
    List<Offer> withModal = List.of(new Offer("modal", Optional.empty(), CONTAINER_GPU, null),
        new Offer("e2b", Optional.empty(), VM, null));
    List<Candidate> g = Placement.plan(gpu, withModal, Policy.DEFAULT, PRICES);
    assertThat(order(g)).containsExactly("modal:not_tried", "e2b:rejected");
    assertThat(g.get(0).hourlyUsd()).isEqualByComparingTo("2.56");
    assertThat(g.get(1).reason()).isEqualTo("offers no GPUs");

    Requirements image = new Requirements(1.0, 1024, null, "python:3.12", null, false, null, null, null, null, null);
    List<Candidate> i = Placement.plan(image, offers(), Policy.DEFAULT, PRICES);
    assertThat(i.get(0).backend()).isEqualTo("daytona");
    assertThat(i).filteredOn(c -> c.backend().equals("e2b")).singleElement().extracting(Candidate::reason)
        .isEqualTo("does not run images (image was given)");
    assertThat(i).filteredOn(c -> c.backend().equals("local")).singleElement().extracting(Candidate::reason)
        .isEqualTo("does not run images (image was given)");
    Requirements offline = new Requirements(1.0, 1024, null, null, null, false, null, null, null, null, null);
    assertThat(Placement.plan(offline, offers(), Policy.DEFAULT, PRICES)).filteredOn(c -> c.backend().equals("local"))
        .singleElement().extracting(Candidate::reason)
        .isEqualTo("cannot cut a sandbox off the internet (allow_internet is false)");
  }

  @Test
  void prefer_breaks_price_ties_then_health_and_exclude_rejects() {
    List<Offer> free = List.of(new Offer("local", Optional.empty(), PROCESS, null),
        new Offer("bwrap", Optional.empty(), new PlacementFacts(Isolation.NAMESPACE, false, false, false, true), "healthy"),
        new Offer("docker", Optional.empty(), CONTAINER_GPU, null));
    assertThat(order(Placement.plan(req(1024, null), free, Policy.DEFAULT, PRICES)))
        .as("equal price: healthy before unchecked, then the stronger isolation")
        .containsExactly("bwrap:not_tried", "docker:not_tried", "local:not_tried");
    List<Offer> processes = List.of(new Offer("local", Optional.empty(), PROCESS, null),
        new Offer("docker", Optional.empty(), CONTAINER_GPU, null), new Offer("box", Optional.empty(), PROCESS, null));
    assertThat(order(Placement.plan(req(1024, null), processes, Policy.DEFAULT, PRICES)))
        .as("the same isolation: by name")
        .containsExactly("docker:not_tried", "box:not_tried", "local:not_tried");
    Requirements prefer = new Requirements(1.0, 1024, null, null, null, null, null, null, null,
        List.of("local", "docker"), List.of("bwrap"));
    List<Candidate> p = Placement.plan(prefer, free, Policy.DEFAULT, PRICES);
    assertThat(order(p)).containsExactly("local:not_tried", "docker:not_tried", "bwrap:rejected");
    assertThat(p.get(2).reason()).isEqualTo("excluded by the request");
  }
}
