package ai.bespokelabs.sandbox.adapters.local;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import ai.bespokelabs.sandbox.core.config.ConfigException;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

@Tag("security")
class HostUsersTest {
  @TempDir
  Path tmp;

  /** A few uids of the block, somewhere no other test of this host is likely to run programs as. */
  static int window() {
    return HostUsers.UID_BASE + 40_000 + java.util.concurrent.ThreadLocalRandom.current().nextInt(20_000);
  }

  /** The former hash of the sandbox id gave two of 300 live sandboxes the same uid about half the time. */
  @Test
  void everySandboxGetsAUidOfItsOwnUntilTheRangeIsSpentAndAReleasedOneIsFreeAgain() throws Exception {
    int first = window();
    HostUsers users = new HostUsers(Optional.empty(), true).withUids(first, 8, tmp.resolve("uids"));
    HostUsers.Held one = users.held("local");
    HostUsers.Held two = users.held("bwrap");
    List<Integer> held = new ArrayList<>();
    for (int i = 0; i < 8; i++) {
      held.add((i % 2 == 0 ? one : two).allocate(null));
    }
    assertThat(new HashSet<>(held)).hasSameSizeAs(held);
    assertThat(held).allMatch(u -> u >= first && u < first + 8);
    try (var files = Files.list(tmp.resolve("uids"))) {
      assertThat(files.map(f -> f.getFileName().toString()).filter(n -> !n.startsWith("."))).hasSize(8);
    }
    assertThatThrownBy(() -> one.allocate(null)).isInstanceOf(ProviderException.class)
        .satisfies(e -> assertThat(((ProviderException) e).error().context()).containsEntry("provider_code",
            "host_uids_exhausted"));
    int freed = held.get(1);
    one.release(freed); // not this backend's: nothing happens
    assertThatThrownBy(() -> one.allocate(null)).isInstanceOf(ProviderException.class);
    two.release(freed);
    assertThat(tmp.resolve("uids").resolve(String.valueOf(freed))).doesNotExist();
    assertThat(one.allocate(null)).isEqualTo(freed);
    one.close();
    two.close();
  }

  @Test
  void aUidLetGoStaysReservedWhileItsDirectoryIsOwnedByItAndNoUidIsGivenThatAProcessRunsAs() throws Exception {
    assumeTrue(HostUsers.detect().dropping(), "root changes file owners and runs programs as other uids");
    int first = window();
    HostUsers users = new HostUsers(Optional.empty(), true).withUids(first, 2, tmp.resolve("uids"));
    HostUsers.Held gateway = users.held("local");
    Path dir = Files.createDirectory(tmp.resolve("sbx"));
    int uid = gateway.allocate(dir);
    Files.setAttribute(dir, "unix:uid", uid);
    gateway.close(); // as a gateway that stopped with the sandbox's directory still there
    HostUsers.Held other = users.held("bwrap");
    int next = other.allocate(null);
    assertThat(next).isNotEqualTo(uid);
    assertThatThrownBy(() -> other.allocate(null)).isInstanceOf(ProviderException.class);
    HostUsers.Held restarted = users.held("local");
    assertThat(restarted.claim(uid, dir)).isTrue();
    restarted.close();
    Files.delete(dir);
    assertThat(other.allocate(null)).as("free once its directory is gone").isEqualTo(uid);
    other.release(uid);

    Process running = new ProcessBuilder("setpriv", "--reuid=" + uid, "--regid=" + uid, "--clear-groups", "sleep",
        "30").start();
    try {
      Thread.sleep(300);
      assertThatThrownBy(() -> other.allocate(null)).as("a process runs as %d", uid)
          .isInstanceOf(ProviderException.class);
    } finally {
      running.destroy();
      running.waitFor();
    }
    assertThat(other.allocate(null)).isEqualTo(uid);
    other.close();
  }

  @Test
  void aRangeOutsideTheBlockOrARelativeLockDirectoryIsRefused() {
    HostUsers users = new HostUsers(Optional.empty(), true);
    assertThatThrownBy(() -> users.withUids(HostUsers.UID_BASE - 1, 2, tmp)).isInstanceOf(ConfigException.class)
        .hasMessageStartingWith("BESPOKE_SANDBOX_UIDS");
    assertThatThrownBy(() -> users.withUids(HostUsers.UID_BASE + HostUsers.UID_COUNT - 1, 2, tmp))
        .isInstanceOf(ConfigException.class);
    assertThatThrownBy(() -> users.withUids(HostUsers.UID_BASE, 2, Path.of("rel")))
        .isInstanceOf(ConfigException.class).hasMessageStartingWith("BESPOKE_SANDBOX_UID_LOCKS");
  }

  @Test
  void aRootGatewayWithoutSetprivRefusesRatherThanRunProgramsAsRoot() {
    HostUsers users = new HostUsers(Optional.empty(), true);
    assertThatThrownBy(() -> users.dropTo(HostUsers.UID_BASE)).isInstanceOf(ProviderException.class);
    assertThat(new HostUsers(Optional.empty(), false).dropTo(HostUsers.UID_BASE)).isEmpty();
    // the operator reads what to install, in the create's error and in /v1/providers
    String install = "setpriv is not installed on this host (Debian/Ubuntu: apt-get install util-linux)";
    assertThat(users.missing()).contains(install);
    assertThatThrownBy(() -> users.check("local")).isInstanceOfSatisfying(ProviderException.class, e -> {
      assertThat(e.error().code()).isEqualTo(ai.bespokelabs.sandbox.core.error.ErrorCode.BACKEND_NOT_INSTALLED);
      assertThat(e.error().reason()).isEqualTo(install);
    });
    assertThat(new HostUsers(Optional.of(java.nio.file.Path.of("/usr/bin/setpriv")), true).missing()).isEmpty();
  }

  @Test
  void theEnvironmentReadsBackExactly() throws Exception {
    String script = EnvHandOff.script(new java.util.LinkedHashMap<>(java.util.Map.of("A", "it's $(id) `x` \\ \"q\"\nline")));
    Process p = new ProcessBuilder("/bin/sh", "-c", script + "printf %s \"$A\"").start();
    assertThat(new String(p.getInputStream().readAllBytes())).isEqualTo("it's $(id) `x` \\ \"q\"\nline");
    assertThatThrownBy(() -> EnvHandOff.script(java.util.Map.of("A;B", "x"))).isInstanceOf(IllegalArgumentException.class);
  }
}
