package ai.bespokelabs.sandbox.adapters.local;

import java.util.Optional;

/** Every case of {@link ProcessRunnerTest} with programs started through the {@code setsid} program. */
class ProcessRunnerSetsidTest extends ProcessRunnerTest {
  @Override
  ProcessRunner newRunner() {
    return new ProcessRunner("local", false, Optional.empty());
  }

  @Override
  boolean usesTheDeadlineTimer() {
    return false;
  }
}
