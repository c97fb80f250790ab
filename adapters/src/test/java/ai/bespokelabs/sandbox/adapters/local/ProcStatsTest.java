package ai.bespokelabs.sandbox.adapters.local;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ProcStatsTest {
  /** A command name may hold spaces and parentheses: the fields are read after the last ')'. */
  @Test
  void a_process_with_an_awkward_name_reads_right(@TempDir Path dir) throws Exception {
    Path odd = Files.createSymbolicLink(dir.resolve("x) (y z"), Path.of("/bin/sleep"));
    Process p = new ProcessBuilder(odd.toString(), "30").start();
    try {
      ProcStats.Stat self = ProcStats.of(ProcessHandle.current().pid());
      ProcStats.Stat child = ProcStats.of(p.pid());
      assertThat(child).isNotNull();
      assertThat(child.pid()).isEqualTo(p.pid());
      assertThat(child.state()).isIn('R', 'S', 'D');
      assertThat(child.pgrp()).as("a child stays in its parent's group").isEqualTo(self.pgrp());
      assertThat(child.startTime()).isGreaterThanOrEqualTo(self.startTime());
      long[] seen = {0};
      ProcStats.forEach(s -> {
        if (s.pid() == p.pid() && s.pgrp() == self.pgrp()) {
          seen[0]++;
        }
      });
      assertThat(seen[0]).isEqualTo(1);
    } finally {
      p.destroyForcibly().waitFor();
    }
    assertThat(ProcStats.of(p.pid())).as("a reaped process is gone").isNull();
  }
}
