package ai.bespokelabs.sandbox.adapters.local;

import static ai.bespokelabs.sandbox.adapters.local.Fixtures.create;
import static ai.bespokelabs.sandbox.adapters.local.Fixtures.exec;
import static ai.bespokelabs.sandbox.adapters.local.Fixtures.shell;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import ai.bespokelabs.sandbox.adapters.host.CapturingSink;
import ai.bespokelabs.sandbox.adapters.host.ExecHandle;
import ai.bespokelabs.sandbox.core.bus.Messages.DestroySandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecResult;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecSandbox;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Clock;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The resident supervisor of local sandboxes (enabled for these tests only). */
class SupervisorTest {
  @TempDir
  Path data;

  private LocalProvider provider;

  @BeforeEach
  void setUp() {
    System.setProperty("bespoke.localSupervisor", "true");
    assumeTrue(SupervisorBinary.path().isPresent(), "no supervisor binary in this build");
    provider = new LocalProvider(LocalProvider.BACKEND, data.resolve("sandboxes"), Clock.systemUTC(),
        HostWrapper.NONE, new Workdirs(List.of(data), data.resolve("gateway")));
    provider.create(create("sbx_a", Map.of("GREETING", "hello there"), null));
  }

  @AfterEach
  void tearDown() {
    if (provider != null) {
      provider.destroy(new DestroySandbox("sbx_a", null));
    }
    System.clearProperty("bespoke.localSupervisor");
  }

  private long supervisorPid() {
    return Long.parseLong(provider.exec(shell("sbx_a", "echo $PPID")).stdout().trim());
  }

  /** Verifies that executions run under one supervisor with their output, exit codes, env, stdin and timeouts. */
  @Test
  void executionsRunUnderOneResidentSupervisor() throws Exception {
    long supervisor = supervisorPid();
    assertThat(supervisorPid()).isEqualTo(supervisor);
    assertThat(ProcessHandle.of(supervisor).flatMap(h -> h.info().command())).get().asString()
        .endsWith("sandbox-supervisor");
    ExecResult r = provider.exec(shell("sbx_a", "echo $GREETING; echo err >&2; exit 3"));
    assertThat(r.stdout()).isEqualTo("hello there\n");
    assertThat(r.stderr()).isEqualTo("err\n");
    assertThat(r.exitCode()).isEqualTo(3);
    assertThat(provider.exec(shell("sbx_a", "printf '\\xe2\\x82'; printf '\\xac'")).stdout()).isEqualTo("€");
    assertThat(provider.exec(exec("sbx_a", null, "id", List.of("-u"), Map.of(), null)).exitCode()).isZero();

    CapturingSink sink = new CapturingSink(1 << 20);
    ExecHandle h = provider.start(new ExecSandbox("sbx_a", "exe_in", null, null, null, "cat", null, Map.of(), null,
        10, 1 << 20, true, null, null), sink);
    h.writeStdin("piped\n".getBytes(StandardCharsets.UTF_8));
    h.closeStdin();
    assertThat(sink.await().stdout()).isEqualTo("piped\n");

    ExecResult timedOut = provider.exec(new ExecSandbox("sbx_a", "exe_t", null, null, null, "sleep 30", null,
        Map.of(), null, 1, 1024));
    assertThat(timedOut.exitCode()).isEqualTo(124);
    assertThat(timedOut.timedOut()).isTrue();

    CapturingSink signalled = new CapturingSink(1024);
    ExecHandle s = provider.start(shell("sbx_a", "sleep 30"), signalled);
    s.signal("TERM");
    ExecResult term = signalled.await();
    assertThat(term.exitCode()).isEqualTo(143);
  }

  /** Verifies that sandbox code can neither open nor inherit the supervisor's control pipes. */
  @Test
  void sandboxCodeCannotReachTheControlChannel() {
    long supervisor = supervisorPid();
    ExecResult fds = provider.exec(shell("sbx_a", "ls /proc/self/fd"));
    assertThat(fds.stdout().split("\n")).as("only its own stdio and ls's directory").containsExactly("0", "1", "2", "3");
    ExecResult open = provider.exec(shell("sbx_a", "ls /proc/" + supervisor + "/fd || exit 9; echo x > /proc/"
        + supervisor + "/fd/1"));
    assertThat(open.exitCode()).as(open.stdout() + open.stderr()).isEqualTo(9);
    ExecResult memory = provider.exec(shell("sbx_a", "head -c1 /proc/" + supervisor + "/mem && echo read"));
    assertThat(memory.stdout()).doesNotContain("read");
  }

  /** Verifies that killing the supervisor from inside fails the running execution clearly, and the next one works. */
  @Test
  void aSupervisorKilledFromInsideFailsItsExecutionsAndIsReplaced() {
    long supervisor = supervisorPid();
    CapturingSink background = new CapturingSink(1024);
    provider.start(shell("sbx_a", "sleep 60"), background);
    long t0 = System.nanoTime();
    ExecResult killer = provider.exec(shell("sbx_a", "sleep 0.2; kill -9 $PPID; sleep 20"));
    assertThat((System.nanoTime() - t0) / 1_000_000).as("no hang").isLessThan(10_000);
    assertThat(killer.exitCode()).isEqualTo(Supervisor.LOST_EXIT_CODE);
    assertThat(killer.stderr()).contains("supervisor ended");
    assertThat(background.await().exitCode()).isEqualTo(Supervisor.LOST_EXIT_CODE);

    ExecResult next = provider.exec(shell("sbx_a", "echo again $PPID"));
    assertThat(next.exitCode()).isZero();
    assertThat(next.stdout()).startsWith("again ").doesNotContain(" " + supervisor + "\n");
  }

  /** Verifies that destroy ends the supervisor and everything its executions left behind. */
  @Test
  void destroyKillsTheSupervisorAndLeftovers() throws Exception {
    long supervisor = supervisorPid();
    long leftover = Long.parseLong(provider.exec(shell("sbx_a", "sleep 100 >/dev/null 2>&1 & echo $!")).stdout().trim());
    assertThat(Fixtures.isRunning(leftover)).isTrue();
    provider.destroy(new DestroySandbox("sbx_a", null));
    assertThat(Fixtures.awaitDeath(leftover)).isTrue();
    assertThat(Fixtures.awaitDeath(supervisor)).isTrue();
  }
}
