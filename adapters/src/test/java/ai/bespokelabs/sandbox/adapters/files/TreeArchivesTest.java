package ai.bespokelabs.sandbox.adapters.files;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.bespokelabs.sandbox.adapters.http.ClientContext;
import ai.bespokelabs.sandbox.core.model.FileEntry;
import ai.bespokelabs.sandbox.adapters.spi.FileReader;
import ai.bespokelabs.sandbox.adapters.spi.FileWriter;
import ai.bespokelabs.sandbox.core.bus.Messages.FileOp;
import ai.bespokelabs.sandbox.core.error.ApiException;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.apache.commons.compress.compressors.gzip.GzipCompressorInputStream;
import org.apache.commons.compress.compressors.gzip.GzipCompressorOutputStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Directory archives over a backend's single-file operations, against a file system in memory. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class TreeArchivesTest {
  static Vertx vertx;
  static Context context;

  @BeforeAll
  static void start() {
    vertx = Vertx.vertx();
    context = vertx.getOrCreateContext();
  }

  @AfterAll
  static void stop() throws Exception {
    vertx.close().await(10, TimeUnit.SECONDS);
  }

  /** Runs {@code work} on the adapter-like context and waits for it. */
  static <T> T on(Supplier<Future<T>> work) {
    try {
      return ClientContext.run(context, work).toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
    } catch (ExecutionException e) {
      throw e.getCause() instanceof RuntimeException r ? r : new IllegalStateException(e.getCause());
    } catch (InterruptedException | TimeoutException e) {
      throw new IllegalStateException(e);
    }
  }

  static FileOp op(String path) {
    return new FileOp("open_archive", "sbx", "rid", path, null, null, false, false);
  }

  static byte[] download(MemoryFileSystem fs, String path) {
    FileReader reader = on(() -> fs.openArchiveRead(op(path)));
    assertThat(reader.size()).isEqualTo(-1);
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    for (Buffer b; (b = on(() -> reader.read(16 * 1024))) != null; ) {
      assertThat(b.length()).isPositive().isLessThanOrEqualTo(16 * 1024);
      out.writeBytes(b.getBytes());
    }
    on(reader::close);
    return out.toByteArray();
  }

  /** The archive's entries: name to content (directories: null). */
  static Map<String, byte[]> entries(byte[] tgz) {
    Map<String, byte[]> out = new LinkedHashMap<>();
    try (TarArchiveInputStream tar = new TarArchiveInputStream(new GzipCompressorInputStream(
        new ByteArrayInputStream(tgz)))) {
      for (TarArchiveEntry e; (e = tar.getNextEntry()) != null; ) {
        out.put(e.getName(), e.isDirectory() ? null : tar.readAllBytes());
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return out;
  }

  /** Uploads the archive in pieces and commits it; the spool is gone afterwards, whatever the outcome. */
  static void upload(MemoryFileSystem fs, String path, byte[] tgz, int piece) {
    FileWriter writer = on(() -> fs.openArchiveWrite(op(path)));
    Path spool = ((SpooledWriter) writer).spool();
    assertThat(spool).exists();
    try {
      for (int i = 0; i < tgz.length; i += piece) {
        int from = i;
        on(() -> writer.write(Buffer.buffer().appendBytes(tgz, from, Math.min(piece, tgz.length - from))));
      }
      FileEntry dir = on(writer::commit);
      assertThat(dir.isDir()).isTrue();
      assertThat(dir.path()).isEqualTo(path);
    } finally {
      on(writer::abort);
      assertThat(spool).doesNotExist();
    }
  }

  @ParameterizedTest(name = "async answers: {0}")
  @ValueSource(booleans = {false, true})
  void aTreeMakesTheRoundTrip(boolean async) throws IOException {
    MemoryFileSystem src = new MemoryFileSystem(async);
    byte[] big = new byte[700 * 1024];
    new Random(7).nextBytes(big);
    src.put("/src/a/b.txt", "hello".getBytes(StandardCharsets.UTF_8));
    src.put("/src/big.bin", big);
    src.put("/src/empty.txt", new byte[0]);
    src.put("/src/run.sh", "#!/bin/sh\n".getBytes(StandardCharsets.UTF_8));
    src.executables.add("/src/run.sh");
    src.mkdirs("/src/a/nothing");
    src.links.add("/src/a/link");

    Map<String, byte[]> got = entries(download(src, "/src"));
    assertThat(got.keySet()).containsExactly("a/", "a/b.txt", "a/nothing/", "big.bin", "empty.txt", "run.sh");
    assertThat(got.get("big.bin")).isEqualTo(big);
    assertThat(src.openReaders).hasValue(0);
    assertThat(src.cutReaders).as("each file is read to its end").hasValue(0);

    MemoryFileSystem dst = new MemoryFileSystem(async);
    dst.mkdirs("/dst");
    upload(dst, "/dst/", download(src, "/src/"), 100_000);
    assertThat(dst.files.keySet()).containsExactly("/dst/a/b.txt", "/dst/big.bin", "/dst/empty.txt", "/dst/run.sh");
    assertThat(dst.files.get("/dst/big.bin")).isEqualTo(big);
    assertThat(dst.files.get("/dst/a/b.txt")).asString(StandardCharsets.UTF_8).isEqualTo("hello");
    assertThat(dst.executables).containsExactly("/dst/run.sh");
  }

  @Test
  void aFileIsNotADirectory() {
    MemoryFileSystem fs = new MemoryFileSystem(true);
    fs.put("/f.txt", new byte[] {1});
    assertThatThrownBy(() -> on(() -> fs.openArchiveRead(op("/f.txt")))).isInstanceOf(ApiException.class)
        .satisfies(e -> assertThat(((ApiException) e).status()).isEqualTo(422))
        .hasMessage("path is not a directory");
    assertThat(fs.openReaders).hasValue(0);
    assertThatThrownBy(() -> on(() -> fs.openArchiveRead(op("/missing")))).isInstanceOf(ApiException.class)
        .satisfies(e -> assertThat(((ApiException) e).status()).isEqualTo(404));
  }

  @Test
  void aBrokenArchiveExtractsNothing() throws IOException {
    MemoryFileSystem fs = new MemoryFileSystem(true);
    fs.mkdirs("/dst");
    byte[] good = tgz(Map.of("a.txt", "x"));
    byte[] cut = java.util.Arrays.copyOf(good, good.length - 10);
    assertThatThrownBy(() -> upload(fs, "/dst", cut, 7)).isInstanceOf(ApiException.class)
        .satisfies(e -> assertThat(((ApiException) e).status()).isEqualTo(422));
    Map<String, String> escaping = new LinkedHashMap<>();
    escaping.put("ok.txt", "fine");
    escaping.put("../out.txt", "escapes");
    assertThatThrownBy(() -> upload(fs, "/dst", tgz(escaping), 1000)).isInstanceOf(ApiException.class)
        .satisfies(e -> assertThat(((ApiException) e).status()).isEqualTo(422));
    assertThat(fs.files).isEmpty();
  }

  @Test
  void anAbortedUploadLeavesNothing() throws IOException {
    MemoryFileSystem fs = new MemoryFileSystem(false);
    fs.mkdirs("/dst");
    FileWriter writer = on(() -> fs.openArchiveWrite(op("/dst")));
    on(() -> writer.write(Buffer.buffer(tgz(Map.of("a.txt", "x")))));
    Path spool = ((SpooledWriter) writer).spool();
    assertThat(spool).isNotEmptyFile();
    on(writer::abort);
    on(writer::abort);
    assertThat(spool).doesNotExist();
    assertThat(fs.files).isEmpty();
  }

  @Test
  void aFileWhoseSizeChangedIsCutOrPaddedToItsHeader() {
    MemoryFileSystem fs = new MemoryFileSystem(false);
    fs.put("/d/grew", "abcde".getBytes(StandardCharsets.UTF_8));
    fs.reportSize("/d/grew", 3);
    fs.put("/d/shrank", "xy".getBytes(StandardCharsets.UTF_8));
    fs.reportSize("/d/shrank", 5);
    Map<String, byte[]> got = entries(download(fs, "/d"));
    assertThat(got.get("grew")).asString(StandardCharsets.UTF_8).isEqualTo("abc");
    assertThat(got.get("shrank")).isEqualTo(new byte[] {'x', 'y', 0, 0, 0});
    assertThat(fs.openReaders).hasValue(0);
  }

  @Test
  void manyFilesAnsweredAtOnceDoNotDeepenTheStack() {
    MemoryFileSystem fs = new MemoryFileSystem(false);
    for (int i = 0; i < 5000; i++) {
      fs.put("/many/d" + (i % 10) + "/f" + i, new byte[] {(byte) i});
    }
    Map<String, byte[]> got = entries(download(fs, "/many"));
    assertThat(got).hasSize(5010);
  }

  @Test
  void closingADownloadMidwayReleasesTheOpenFile() {
    MemoryFileSystem fs = new MemoryFileSystem(true);
    byte[] big = new byte[1 << 20];
    new Random(3).nextBytes(big);
    fs.put("/d/big", big);
    FileReader reader = on(() -> fs.openArchiveRead(op("/d")));
    assertThat(on(() -> reader.read(1024))).isNotNull();
    assertThat(fs.openReaders).hasValue(1);
    on(reader::close);
    assertThat(fs.openReaders).hasValue(0);
  }

  static byte[] tgz(Map<String, String> files) {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (TarArchiveOutputStream tar = new TarArchiveOutputStream(new GzipCompressorOutputStream(bytes))) {
      for (Map.Entry<String, String> f : files.entrySet()) {
        byte[] content = f.getValue().getBytes(StandardCharsets.UTF_8);
        TarArchiveEntry e = new TarArchiveEntry(f.getKey(), true);
        e.setSize(content.length);
        tar.putArchiveEntry(e);
        tar.write(content);
        tar.closeArchiveEntry();
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return bytes.toByteArray();
  }
}
