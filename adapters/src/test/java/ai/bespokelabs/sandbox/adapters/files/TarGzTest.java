package ai.bespokelabs.sandbox.adapters.files;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.bespokelabs.sandbox.core.error.ApiException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.function.Consumer;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.apache.commons.compress.compressors.gzip.GzipCompressorOutputStream;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What an uploaded archive may cost to check: bounded, whatever a few tiny entries claim. */
@Tag("security")
class TarGzTest {
  @TempDir
  Path tmp;

  Path archive(Consumer<TarArchiveOutputStream> entries) throws Exception {
    Path p = tmp.resolve("a" + System.nanoTime() + ".tar.gz");
    try (OutputStream out = Files.newOutputStream(p);
        TarArchiveOutputStream tar = new TarArchiveOutputStream(new GzipCompressorOutputStream(out))) {
      tar.setLongFileMode(TarArchiveOutputStream.LONGFILE_POSIX);
      entries.accept(tar);
    }
    return p;
  }

  static void dir(TarArchiveOutputStream tar, String name) {
    try {
      tar.putArchiveEntry(new TarArchiveEntry(name + "/"));
      tar.closeArchiveEntry();
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  static String detail(Throwable e) {
    return String.valueOf(((ApiException) e).detail());
  }

  /**
   * Deep paths of long names, each under a first component of its own, made checking the tree keep every
   * prefix: a gzip of kilobytes asked for gigabytes of heap. Names, components, entries are now bounded.
   */
  @Test
  void names_components_and_entries_are_bounded() throws Exception {
    Path longComponent = archive(t -> dir(t, "a".repeat(300)));
    assertThatThrownBy(() -> TarGz.check(longComponent)).isInstanceOf(ApiException.class)
        .satisfies(e -> assertThat(detail(e)).contains("longer than 255 bytes"));
    Path longPath = archive(t -> dir(t, String.join("/", java.util.Collections.nCopies(40, "b".repeat(200)))));
    assertThatThrownBy(() -> TarGz.check(longPath)).isInstanceOf(ApiException.class)
        .satisfies(e -> assertThat(detail(e)).contains("longer than 4096 bytes"));
    Path many = archive(t -> {
      for (int i = 0; i <= TarGz.MAX_ENTRIES; i++) {
        dir(t, "d" + i);
      }
    });
    assertThatThrownBy(() -> TarGz.check(many)).isInstanceOf(ApiException.class)
        .satisfies(e -> assertThat(detail(e)).contains("more than " + TarGz.MAX_ENTRIES + " entries"));
    Path fine = archive(t -> dir(t, String.join("/", java.util.Collections.nCopies(20, "c".repeat(100)))));
    assertThat(TarGz.check(fine)).hasSize(1);
  }
}
