package ai.bespokelabs.sandbox.adapters.local;

import ai.bespokelabs.sandbox.adapters.host.CapturingSink;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/** Run in a JVM of its own by {@link SignalDispositionTest}: prints the status of a program it starts. */
public final class SpawnProbe {
  private SpawnProbe() {}

  public static void main(String[] args) {
    Path dir = Path.of(args[0]);
    ProcessSpec spec = new ProcessSpec(List.of("grep", "^SigIgn", "/proc/self/status"), dir,
        ProcessSpec.environment(dir, Map.of(), Map.of()), 10, 1024);
    CapturingSink sink = new CapturingSink(1024);
    new ProcessRunner("local").start(spec, false, sink, pgid -> { });
    System.out.print(sink.await().stdout());
    System.exit(0);
  }
}
