package ai.bespokelabs.sandbox.adapters.local;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.bespokelabs.sandbox.adapters.files.ReadableFile;
import ai.bespokelabs.sandbox.core.error.ApiException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.attribute.FileTime;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class HostFilesTest {
  @TempDir
  Path data;

  @Test
  void archive_downloads_of_one_sandbox_are_bounded_and_a_closed_one_frees_its_place() throws Exception {
    Path root = Files.createDirectories(data.resolve("sandboxes/sbx_a"));
    byte[] noise = new byte[2 << 20]; // incompressible, more than the download pipe holds
    new Random(1).nextBytes(noise);
    Files.write(root.resolve("big.bin"), noise);
    HostFiles files = new HostFiles(root, null, data.resolve("sandboxes/.files-staging"));
    List<ReadableFile> open = new ArrayList<>();
    try {
      for (int i = 0; i < HostArchives.ARCHIVES_PER_SANDBOX; i++) {
        open.add(files.archiveRead("."));
      }
      assertThatThrownBy(() -> files.archiveRead(".")).isInstanceOfSatisfying(ApiException.class,
          e -> assertThat(e.status()).isEqualTo(429));
      // another sandbox is not affected
      Path other = Files.createDirectories(data.resolve("sandboxes/sbx_b"));
      new HostFiles(other, null, data.resolve("sandboxes/.files-staging")).archiveRead(".").close();
      open.remove(0).close();
      ReadableFile again = null;
      for (int i = 0; i < 100 && again == null; i++) {
        try {
          again = files.archiveRead(".");
        } catch (ApiException e) {
          Thread.sleep(50); // the closed download's producer is still ending
        }
      }
      assertThat(again).isNotNull();
      open.add(again);
    } finally {
      for (ReadableFile f : open) {
        f.close();
      }
    }
  }

  @Test
  void uploads_are_staged_privately_and_what_a_crash_left_there_is_swept() throws Exception {
    Path root = Files.createDirectories(data.resolve("sandboxes/sbx_a"));
    Path staging = Files.createDirectories(data.resolve("sandboxes/.files-staging"));
    Path old = Files.writeString(staging.resolve(".file-left-by-a-crash"), "x");
    Files.setLastModifiedTime(old, FileTime.fromMillis(System.currentTimeMillis() - 2 * 3_600_000));
    Path recent = Files.writeString(staging.resolve(".file-of-a-live-upload"), "x");
    HostFiles files = new HostFiles(root, null, staging);

    var up = files.openWrite("a/b/c.txt", false);
    up.write("hello".getBytes(StandardCharsets.UTF_8));
    assertThat(root.resolve("a")).doesNotExist(); // parents appear only at commit
    assertThat(up.commit().size()).isEqualTo(5);
    assertThat(Files.readString(root.resolve("a/b/c.txt"))).isEqualTo("hello");
    assertThat(old).doesNotExist();
    assertThat(recent).exists();
    try (var left = Files.list(staging)) {
      assertThat(left).containsExactly(recent);
    }

    var aborted = files.openWrite("x/y/z.txt", false);
    aborted.write("lost".getBytes(StandardCharsets.UTF_8));
    aborted.abort();
    assertThat(root.resolve("x")).doesNotExist();
    try (var left = Files.list(staging)) {
      assertThat(left).containsExactly(recent);
    }
  }

  /**
   * Where openat2 exists, a file is opened below the sandbox without following links and without waiting: a
   * FIFO (what sandbox code swaps in between the type check and the open) is opened at once, not read.
   */
  @Test
  void theBeneathOpenerNeverWaitsOnAFifoAndNeverFollowsALinkOrLeaves() throws Exception {
    java.util.Optional<BeneathOpener> opener = BeneathOpener.available();
    org.junit.jupiter.api.Assumptions.assumeTrue(opener.isPresent(), "Java 22+ on Linux 5.6+");
    Path box = java.nio.file.Files.createDirectories(data.resolve("beneath"));
    Path fifo = box.resolve("fifo");
    assertThat(new ProcessBuilder("mkfifo", fifo.toString()).start().waitFor()).isZero();
    long t0 = System.nanoTime();
    int fd = opener.get().open(box, "fifo");
    try {
      assertThat((System.nanoTime() - t0) / 1_000_000).as("ms to open a FIFO nobody writes").isLessThan(1000);
      assertThat(java.nio.file.Files.readAttributes(Path.of("/proc/self/fd/" + fd),
          java.nio.file.attribute.PosixFileAttributes.class).isOther()).isTrue();
    } finally {
      opener.get().close(fd);
    }
    java.nio.file.Files.writeString(data.resolve("outside"), "secret");
    java.nio.file.Files.createSymbolicLink(box.resolve("link"), data.resolve("outside"));
    java.nio.file.Files.createDirectories(box.resolve("d"));
    for (String refused : new String[] {"link", "../outside", "d/../../outside", "/etc/passwd"}) {
      org.assertj.core.api.Assertions.assertThatThrownBy(() -> opener.get().open(box, refused))
          .as(refused).isInstanceOf(java.io.IOException.class);
    }
    // a link of the sandbox is read as text; one reached through a link (a swapped directory) never is
    assertThat(opener.get().readLink(box, "link")).isEqualTo(data.resolve("outside").toString());
    java.nio.file.Files.createSymbolicLink(data.resolve("elsewhere"), Path.of("/secret/target"));
    java.nio.file.Files.createSymbolicLink(box.resolve("swapped"), data);
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> opener.get().readLink(box, "swapped/elsewhere"))
        .isInstanceOf(java.io.IOException.class);
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> opener.get().readLink(box, "d"))
        .as("not a link").isInstanceOf(java.io.IOException.class);
  }
}
