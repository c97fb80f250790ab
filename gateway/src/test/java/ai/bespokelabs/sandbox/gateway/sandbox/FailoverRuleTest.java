package ai.bespokelabs.sandbox.gateway.sandbox;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import ai.bespokelabs.sandbox.core.error.ProviderError.Outcome;
import org.junit.jupiter.api.Test;

/** Which failed creates move a {@code backend: "auto"} sandbox on to the next candidate. */
class FailoverRuleTest {
  static ProviderError create(ErrorCode code, boolean retryable, Outcome outcome) {
    return ProviderError.of(code, "daytona", "create", retryable, outcome);
  }

  @Test
  void only_failures_with_nothing_allocated_that_another_backend_would_avoid_fail_over() {
    assertThat(SandboxService.failsOver(create(ErrorCode.CREATION_FAILED, true, Outcome.FAILED)))
        .as("a 429 or 5xx").isTrue();
    assertThat(SandboxService.failsOver(create(ErrorCode.CONNECTION, true, Outcome.FAILED)))
        .as("no connection").isTrue();
    assertThat(SandboxService.failsOver(create(ErrorCode.AUTHENTICATION, false, Outcome.FAILED)))
        .as("credentials refused").isTrue();
    assertThat(SandboxService.failsOver(create(ErrorCode.BACKEND_NOT_INSTALLED, false, Outcome.FAILED))).isTrue();

    assertThat(SandboxService.failsOver(create(ErrorCode.TIMEOUT, true, Outcome.UNKNOWN)))
        .as("the provider may have made it").isFalse();
    assertThat(SandboxService.failsOver(create(ErrorCode.CONNECTION, true, Outcome.UNKNOWN))).isFalse();
    assertThat(SandboxService.failsOver(create(ErrorCode.CONFIGURATION, false, Outcome.FAILED)))
        .as("a request wrong everywhere, such as a bad image").isFalse();
    assertThat(SandboxService.failsOver(create(ErrorCode.WORKSPACE, false, Outcome.FAILED))).isFalse();
  }
}
