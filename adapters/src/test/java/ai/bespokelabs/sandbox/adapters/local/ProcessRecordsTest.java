package ai.bespokelabs.sandbox.adapters.local;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Group ids are pids, which the kernel reuses: a record must never make one sandbox kill another's group. */
class ProcessRecordsTest {
  @TempDir
  Path root;

  private Process group;

  /** A live process group (its leader's pid is its id), as an execution of another sandbox would have. */
  private long startGroup() throws Exception {
    group = new ProcessBuilder("setsid", "sleep", "60").start();
    long deadline = System.nanoTime() + 5_000_000_000L;
    ProcStats.Stat stat;
    // until setsid made it the leader of its own group (just started, it is still in ours)
    while ((stat = ProcStats.of(group.pid())) == null || stat.pgrp() != group.pid()) {
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException("setsid did not make the program a group leader");
      }
      Thread.sleep(5);
    }
    return group.pid();
  }

  @AfterEach
  void stop() {
    if (group != null) {
      group.destroyForcibly();
    }
  }

  @Test
  void anIdGivenToAnotherSandboxsGroupIsNoLongerTheFirstSandboxs() throws Exception {
    long pgid = startGroup();
    ProcessRecords records = new ProcessRecords(root);
    assertThat(records.record("sbx_a", pgid)).isNull(); // a's group with this id, long ended (as if)
    assertThat(records.record("sbx_b", pgid)).as("the id is b's now").isEqualTo("sbx_a");

    assertThat(records.members("sbx_a")).isEmpty();
    assertThat(records.killAll("sbx_a", List.of())).isZero();
    assertThat(group.isAlive()).as("destroying a leaves b's program alone").isTrue();
    assertThat(records.members("sbx_b")).containsExactly(pgid);

    ProcessRecords afterRestart = new ProcessRecords(root);
    assertThat(afterRestart.members("sbx_a")).isEmpty();
    assertThat(afterRestart.record("sbx_c", pgid)).as("who holds an id survives a restart").isEqualTo("sbx_b");
  }

  @Test
  void aGroupWhoseLeaderPidNowBelongsToALaterProcessIsSkipped() throws Exception {
    long pgid = startGroup();
    long start = ProcStats.of(pgid).startTime();
    Files.createDirectories(root.resolve(".groups"));
    // recorded for a leader that started before the process that now has this pid
    Files.writeString(root.resolve(".groups").resolve("sbx_a"), pgid + " " + (start - 1) + "\n");
    ProcessRecords records = new ProcessRecords(root);

    assertThat(records.members("sbx_a")).isEmpty();
    assertThat(records.killAll("sbx_a", List.of(pgid))).isZero();
    assertThat(group.isAlive()).isTrue();

    Files.writeString(root.resolve(".groups").resolve("sbx_b"), pgid + " " + start + "\n");
    assertThat(new ProcessRecords(root).members("sbx_b")).as("the recorded leader itself").containsExactly(pgid);
  }

  /** Ids above any pid_max (2^22): never a live process, as the long-ended groups of a busy sandbox. */
  private static final long ENDED = 5_000_000L;

  @Test
  void aBusySandboxsRecordStaysSmallAndKeepsItsLiveGroup() throws Exception {
    long pgid = startGroup();
    ProcessRecords records = new ProcessRecords(root);
    records.record("sbx_a", pgid);
    for (int i = 0; i < 20_000; i++) {
      records.record("sbx_a", ENDED + i % 50); // the same few ids over and over, as pids wrap around
    }
    Path file = root.resolve(".groups").resolve("sbx_a");
    assertThat(Files.readAllLines(file)).as("rewritten as one line per id once it grew")
        .hasSizeLessThanOrEqualTo(ProcessRecords.COMPACT_AT + 51);
    assertThat(records.members("sbx_a")).containsExactly(pgid);
    assertThat(new ProcessRecords(root).members("sbx_a")).as("after a restart").containsExactly(pgid);
  }

  @Test
  void anIdTakenByAnotherSandboxIsDroppedByAnAppendedLine() throws Exception {
    long pgid = startGroup();
    ProcessRecords records = new ProcessRecords(root);
    records.record("sbx_a", pgid);
    records.record("sbx_a", ENDED);
    records.record("sbx_b", pgid);
    assertThat(Files.readAllLines(root.resolve(".groups").resolve("sbx_a")))
        .containsExactly(pgid + " " + ProcStats.of(pgid).startTime(), ENDED + " 0", pgid + " -");
    assertThat(records.members("sbx_a")).isEmpty();

    records.record("sbx_a", pgid); // the id comes back to a (as if b's group ended and a's new one got it)
    assertThat(records.members("sbx_a")).containsExactly(pgid);
    assertThat(records.members("sbx_b")).isEmpty();

    Files.delete(root.resolve(".groups").resolve("sbx_a")); // a destroyed while c's group takes the id
    assertThat(records.record("sbx_c", pgid)).isEqualTo("sbx_a");
    assertThat(root.resolve(".groups").resolve("sbx_a")).as("no record is started for a destroyed sandbox")
        .doesNotExist();
  }

  @Test
  void aLineCutShortByACrashDoesNotHideTheOthers() throws Exception {
    long pgid = startGroup();
    long start = ProcStats.of(pgid).startTime();
    Files.createDirectories(root.resolve(".groups"));
    Files.writeString(root.resolve(".groups").resolve("sbx_a"), pgid + " " + start + "\n123 4x\n98");

    assertThat(new ProcessRecords(root).members("sbx_a")).containsExactly(pgid);
  }
}
