package ai.bespokelabs.sandbox.core.policy;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.core.model.Policy;
import java.util.List;
import org.junit.jupiter.api.Test;

class PolicyDecisionTest {
  static Policy policy(Integer concurrent, List<String> backends, List<String> gpus, Integer lifetime) {
    return new Policy(concurrent, null, null, backends, gpus, lifetime, 2, null, null);
  }

  @Test
  void checks_run_in_the_reference_order() {
    Policy p = policy(1, List.of("local"), List.of("L4"), 60);
    var all = new PolicyDecision.Request("e2b", "H100", null);
    assertThat(PolicyDecision.evaluate(p, all, 5).orElseThrow().policy()).isEqualTo("allowed_backends");
    assertThat(PolicyDecision.evaluate(p, new PolicyDecision.Request("local", "H100", null), 5).orElseThrow().policy())
        .isEqualTo("allowed_gpu_types");
    assertThat(PolicyDecision.evaluate(p, new PolicyDecision.Request("local", null, null), 5).orElseThrow().policy())
        .isEqualTo("max_sandbox_lifetime_secs");
    assertThat(PolicyDecision.evaluate(p, new PolicyDecision.Request("local", "L4", 60), 1).orElseThrow().policy())
        .isEqualTo("max_concurrent_sandboxes");
    assertThat(PolicyDecision.evaluate(p, new PolicyDecision.Request("local", "L4", 60), 0)).isEmpty();
  }

  @Test
  void the_default_policy_allows_everything() {
    assertThat(PolicyDecision.evaluate(Policy.DEFAULT, new PolicyDecision.Request("any", "H100", null), 1000))
        .isEmpty();
  }

  @Test
  void denial_detail_has_the_contract_shape() {
    var d = PolicyDecision.evaluate(policy(null, List.of("a", "b"), null, null),
        new PolicyDecision.Request("c", null, null), 0).orElseThrow();
    assertThat(d.detail().encode()).isEqualTo("{\"message\":\"Backend c is not allowed by organization policy.\","
        + "\"code\":\"policy_denied\",\"policy\":\"allowed_backends\",\"retryable\":false,\"current\":\"c\","
        + "\"limit\":\"a,b\"}");
  }
}
