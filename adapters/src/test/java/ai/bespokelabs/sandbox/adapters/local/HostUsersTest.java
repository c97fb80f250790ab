package ai.bespokelabs.sandbox.adapters.local;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.bespokelabs.sandbox.core.error.ProviderException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

@Tag("security")
class HostUsersTest {
  /** The former hash of the sandbox id gave two of 300 live sandboxes the same uid about half the time. */
  @Test
  void everyLiveSandboxGetsAUidOfItsOwnUntilTheRangeIsSpent() {
    List<Integer> held = new ArrayList<>();
    try {
      while (held.size() < HostUsers.UID_COUNT) {
        try {
          held.add(HostUsers.allocate());
        } catch (ProviderException e) {
          break; // a uid another test of this JVM holds
        }
      }
      assertThat(new HashSet<>(held)).hasSameSizeAs(held);
      assertThat(held).allMatch(u -> u >= HostUsers.UID_BASE && u < HostUsers.UID_BASE + HostUsers.UID_COUNT);
      assertThat(held.size()).isGreaterThan(HostUsers.UID_COUNT - 100);
      assertThatThrownBy(HostUsers::allocate).isInstanceOf(ProviderException.class);
      HostUsers.release(held.remove(0));
      int again = HostUsers.allocate();
      held.add(again);
      assertThat(held.subList(0, held.size() - 1)).doesNotContain(again);
    } finally {
      held.forEach(HostUsers::release);
    }
  }

  @Test
  void aRootGatewayWithoutSetprivRefusesRatherThanRunProgramsAsRoot() {
    HostUsers users = new HostUsers(Optional.empty(), true);
    assertThatThrownBy(() -> users.dropTo(HostUsers.UID_BASE)).isInstanceOf(ProviderException.class);
    assertThat(new HostUsers(Optional.empty(), false).dropTo(HostUsers.UID_BASE)).isEmpty();
  }

  @Test
  void theEnvironmentReadsBackExactly() throws Exception {
    String script = EnvHandOff.script(new java.util.LinkedHashMap<>(java.util.Map.of("A", "it's $(id) `x` \\ \"q\"\nline")));
    Process p = new ProcessBuilder("/bin/sh", "-c", script + "printf %s \"$A\"").start();
    assertThat(new String(p.getInputStream().readAllBytes())).isEqualTo("it's $(id) `x` \\ \"q\"\nline");
    assertThatThrownBy(() -> EnvHandOff.script(java.util.Map.of("A;B", "x"))).isInstanceOf(IllegalArgumentException.class);
  }
}
