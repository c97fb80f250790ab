package ai.bespokelabs.sandbox.gateway.security;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import ai.bespokelabs.sandbox.gateway.GatewayExtension;
import ai.bespokelabs.sandbox.gateway.TestGateway;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.apache.commons.compress.compressors.gzip.GzipCompressorInputStream;
import org.apache.commons.compress.compressors.gzip.GzipCompressorOutputStream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Attacks on the files API of the host-directory backends, run against a real gateway: symlink races by
 * sandbox code, FIFOs, hostile archives, links in listings and absurdly deep paths.
 */
@Tag("security")
@ExtendWith(GatewayExtension.class)
class FilesAttackTest {
  static final String SECRET = "top-secret-0123456789";
  static TestGateway gw;
  static String key;
  static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(5)).build();

  @BeforeAll
  static void start() {
    key = gw.bootstrap("Attacker");
  }

  static String q(String s) {
    return URLEncoder.encode(s, StandardCharsets.UTF_8).replace("%2F", "/");
  }

  static HttpResponse<byte[]> request(String method, String id, String route, String path, byte[] body, String k) {
    HttpRequest r = HttpRequest.newBuilder(URI.create(gw.base + "/v1/sandboxes/" + id + route + "?path=" + q(path)))
        .header("Authorization", "Bearer " + k).timeout(Duration.ofSeconds(60))
        .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofByteArray(body))
        .build();
    try {
      return HTTP.send(r, HttpResponse.BodyHandlers.ofByteArray());
    } catch (Exception e) {
      throw new IllegalStateException(method + " " + route + " " + path, e);
    }
  }

  static HttpResponse<byte[]> get(String id, String path) {
    return request("GET", id, "/files/content", path, null, key);
  }

  static HttpResponse<byte[]> put(String id, String path, String content) {
    return request("PUT", id, "/files/content", path, content.getBytes(StandardCharsets.UTF_8), key);
  }

  static String text(HttpResponse<byte[]> r) {
    return new String(r.body(), StandardCharsets.UTF_8);
  }

  static String run(String id, String command) {
    TestGateway.Resp r = gw.send("POST", "/v1/sandboxes/" + id + "/execute", key,
        new JsonObject().put("command", command).encode());
    assertThat(r.status()).as(r.body()).isEqualTo(200);
    return r.json().getString("stdout");
  }

  static Path dir(String id) {
    return Path.of(gw.send("GET", "/v1/sandboxes/" + id, key, null).json().getString("provider_resource_id"));
  }

  static String sandbox(String backend) {
    return gw.sandbox(key, new JsonObject().put("backend", backend).put("allow_internet", false)).getString("id");
  }

  /** The names and contents of the regular files in a tar.gz. */
  static Map<String, String> files(byte[] archive) throws Exception {
    Map<String, String> out = new java.util.TreeMap<>();
    try (TarArchiveInputStream tar = new TarArchiveInputStream(new GzipCompressorInputStream(
        new ByteArrayInputStream(archive)))) {
      for (TarArchiveEntry e; (e = tar.getNextEntry()) != null; ) {
        if (e.isFile()) {
          out.put(e.getName(), new String(tar.readAllBytes(), StandardCharsets.UTF_8));
        } else {
          out.put(e.getName(), e.isSymbolicLink() ? "-> " + e.getLinkName() : "");
        }
      }
    } catch (java.io.IOException e) {
      // a download cut short by an entry replaced meanwhile: what arrived is checked
    }
    return out;
  }

  // ---- item 4: symlink races ------------------------------------------------------------------------------

  static final String SWAP = """
      import ctypes, sys, time
      libc = ctypes.CDLL(None, use_errno=True)
      end = time.time() + float(sys.argv[1])
      n = 0
      while time.time() < end:
          libc.renameat2(-100, b"d", -100, b"l", 2)  # RENAME_EXCHANGE: d <-> l, a link to the secret
          n += 1
      print(n)
      """;

  @ParameterizedTest
  @ValueSource(strings = {"local", "bwrap"})
  void sandbox_code_swapping_a_directory_with_a_link_never_leads_the_files_api_outside(String backend)
      throws Exception {
    Path secret = Files.createTempDirectory("secret-");
    Files.writeString(secret.resolve("secret"), SECRET);
    Files.writeString(secret.resolve("only-outside"), SECRET);
    Files.writeString(secret.resolve("victim"), SECRET);
    String id = sandbox(backend);
    assertThat(put(id, "swap.py", SWAP).statusCode()).isEqualTo(201);
    run(id, "mkdir d && echo inside > d/secret && echo inside > d/victim && ln -s " + secret + " l");
    TestGateway.Resp started = gw.send("POST", "/v1/sandboxes/" + id + "/executions", key,
        new JsonObject().put("command", "python3 swap.py 15").encode());
    assertThat(started.status()).as(started.body()).isEqualTo(202);
    Thread.sleep(500);

    ExecutorService pool = Executors.newFixedThreadPool(4);
    try {
      List<Future<String>> reads = new ArrayList<>();
      for (int i = 0; i < 200; i++) {
        reads.add(pool.submit(() -> {
          HttpResponse<byte[]> r = get(id, "d/secret");
          return r.statusCode() + " " + text(r);
        }));
      }
      List<Future<Integer>> writes = new ArrayList<>();
      for (int i = 0; i < 60; i++) {
        String name = i % 2 == 0 ? "d/new-" + i : "d/sub-" + i + "/new";
        writes.add(pool.submit(() -> put(id, name, "planted").statusCode()));
        if (i % 2 == 0) {
          writes.add(pool.submit(() -> request("DELETE", id, "/files", "d/victim", null, key).statusCode()));
        }
      }
      byte[] planted = tarGz(t -> {
        file(t, "from-archive", "planted");
        file(t, "deeper/from-archive", "planted");
      });
      for (int i = 0; i < 30; i++) {
        String at = i % 2 == 0 ? "d" : "d/unpacked-" + i;
        writes.add(pool.submit(() -> request("PUT", id, "/files/archive", at, planted, key).statusCode()));
      }
      List<Future<Map<String, String>>> archives = new ArrayList<>();
      List<Future<String>> listings = new ArrayList<>();
      for (int i = 0; i < 40; i++) {
        archives.add(pool.submit(() -> {
          HttpResponse<byte[]> r = request("GET", id, "/files/archive", "d", null, key);
          return r.statusCode() == 200 ? files(r.body()) : Map.of();
        }));
        archives.add(pool.submit(() -> {
          HttpResponse<byte[]> r = request("GET", id, "/files/archive", ".", null, key);
          return r.statusCode() == 200 ? files(r.body()) : Map.of();
        }));
        listings.add(pool.submit(() -> text(request("GET", id, "/files", "d", null, key))));
      }
      int inside = 0;
      int swapped = 0;
      for (Future<String> f : reads) {
        String r = f.get(120, TimeUnit.SECONDS);
        assertThat(r).doesNotContain(SECRET);
        inside += r.equals("200 inside\n") ? 1 : 0;
        swapped += r.startsWith("200 ") ? 0 : 1;
      }
      // on a loaded machine one side of the race may not have shown yet: read on (each read still checked)
      for (long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(60); (inside == 0 || swapped == 0)
          && System.nanoTime() < end; ) {
        HttpResponse<byte[]> more = get(id, "d/secret");
        String r = more.statusCode() + " " + text(more);
        assertThat(r).doesNotContain(SECRET);
        inside += r.equals("200 inside\n") ? 1 : 0;
        swapped += r.startsWith("200 ") ? 0 : 1;
      }
      assertThat(inside).as("some reads found the directory in place").isPositive();
      assertThat(swapped).as("some reads met the link the sandbox swapped in: the race really ran").isPositive();
      for (Future<Integer> f : writes) {
        assertThat(f.get(120, TimeUnit.SECONDS)).isIn(201, 204, 404, 409, 422);
      }
      for (Future<Map<String, String>> f : archives) {
        assertThat(f.get(120, TimeUnit.SECONDS).values()).noneMatch(v -> v.contains(SECRET));
      }
      for (Future<String> f : listings) {
        assertThat(f.get(120, TimeUnit.SECONDS)).doesNotContain("only-outside");
      }
    } finally {
      pool.shutdownNow();
    }
    try (var outside = Files.list(secret)) {
      assertThat(outside.map(p -> p.getFileName().toString())).containsExactlyInAnyOrder("secret", "only-outside",
          "victim");
    }
    assertThat(Files.readString(secret.resolve("secret"))).isEqualTo(SECRET);
    gw.send("DELETE", "/v1/sandboxes/" + id, key, null);
  }

  // ---- item 5: FIFOs -----------------------------------------------------------------------------------------

  @ParameterizedTest
  @ValueSource(strings = {"local", "bwrap"})
  void a_fifo_is_refused_at_once_and_another_organization_keeps_working(String backend) throws Exception {
    String id = sandbox(backend);
    run(id, "mkfifo fifo && mkdir tree && mkfifo tree/pipe && echo x > tree/file");
    String other = gw.bootstrap("Bystander");
    String theirs = gw.sandbox(other, new JsonObject().put("backend", "local")).getString("id");

    int n = 4 * Runtime.getRuntime().availableProcessors() + 4;
    ExecutorService pool = Executors.newFixedThreadPool(n);
    try {
      List<Future<HttpResponse<byte[]>>> reads = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        reads.add(pool.submit(() -> get(id, "fifo")));
      }
      // while they are in flight, the other organization's sandbox runs programs
      TestGateway.Resp ran = gw.send("POST", "/v1/sandboxes/" + theirs + "/execute", other,
          new JsonObject().put("command", "echo still here").encode());
      assertThat(ran.status()).isEqualTo(200);
      assertThat(ran.json().getString("stdout")).isEqualTo("still here\n");
      for (Future<HttpResponse<byte[]>> f : reads) {
        HttpResponse<byte[]> r = f.get(10, TimeUnit.SECONDS);
        assertThat(r.statusCode()).isEqualTo(422);
        assertThat(new JsonObject(text(r)).getString("detail"))
            .isEqualTo("path is not a regular file (a FIFO, socket or device)");
      }
    } finally {
      pool.shutdownNow();
    }
    // a tree holding a FIFO archives without it, at once
    CompletableFuture<Map<String, String>> archived = CompletableFuture.supplyAsync(() -> {
      try {
        return files(request("GET", id, "/files/archive", "tree", null, key).body());
      } catch (Exception e) {
        throw new IllegalStateException(e);
      }
    });
    assertThat(archived.get(10, TimeUnit.SECONDS)).containsOnlyKeys("file");
    JsonArray listed = gw.send("GET", "/v1/sandboxes/" + id + "/files?path=tree", key, null).json()
        .getJsonArray("entries");
    assertThat(listed.stream().map(o -> ((JsonObject) o).getString("name") + " " + ((JsonObject) o).getString("type")))
        .containsExactly("file file", "pipe other");
  }

  // ---- item 12: archives ------------------------------------------------------------------------------------

  interface Entries {
    void write(TarArchiveOutputStream tar) throws Exception;
  }

  static byte[] tarGz(Entries entries) throws Exception {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (TarArchiveOutputStream tar = new TarArchiveOutputStream(new GzipCompressorOutputStream(bytes))) {
      tar.setLongFileMode(TarArchiveOutputStream.LONGFILE_POSIX);
      entries.write(tar);
    }
    return bytes.toByteArray();
  }

  static void file(TarArchiveOutputStream tar, String name, String content) throws Exception {
    TarArchiveEntry e = new TarArchiveEntry(name);
    byte[] data = content.getBytes(StandardCharsets.UTF_8);
    e.setSize(data.length);
    tar.putArchiveEntry(e);
    tar.write(data);
    tar.closeArchiveEntry();
  }

  static void special(TarArchiveOutputStream tar, String name, byte flag, String link) throws Exception {
    TarArchiveEntry e = new TarArchiveEntry(name, flag);
    if (link != null) {
      e.setLinkName(link);
    }
    tar.putArchiveEntry(e);
    tar.closeArchiveEntry();
  }

  @ParameterizedTest
  @ValueSource(strings = {"local", "bwrap"})
  void a_hostile_archive_is_refused_whole_and_changes_nothing(String backend) throws Exception {
    String id = sandbox(backend);
    run(id, "mkdir keep && echo kept > keep/k.txt && ln -s /etc out");
    String before = run(id, "find . | sort");
    Map<String, byte[]> hostile = new java.util.LinkedHashMap<>();
    hostile.put("a link through a link", tarGz(t -> {
      file(t, "first.txt", "x");
      special(t, "l", TarArchiveEntry.LF_SYMLINK, ".");
      special(t, "l/l/m", TarArchiveEntry.LF_SYMLINK, "../..");
    }));
    hostile.put("a link leading out through the archive's own link", tarGz(t -> {
      special(t, "up", TarArchiveEntry.LF_SYMLINK, "sub/..");
      special(t, "sub/x", TarArchiveEntry.LF_SYMLINK, "../up/..");
    }));
    hostile.put("an absolute link", tarGz(t -> {
      file(t, "first.txt", "x");
      special(t, "abs", TarArchiveEntry.LF_SYMLINK, "/etc/passwd");
    }));
    hostile.put("a hard link", tarGz(t -> {
      file(t, "first.txt", "x");
      special(t, "hard", TarArchiveEntry.LF_LINK, "first.txt");
    }));
    hostile.put("a character device", tarGz(t -> {
      file(t, "first.txt", "x");
      special(t, "dev", TarArchiveEntry.LF_CHR, null);
    }));
    hostile.put("a block device", tarGz(t -> special(t, "blk", TarArchiveEntry.LF_BLK, null)));
    hostile.put("a FIFO", tarGz(t -> {
      file(t, "first.txt", "x");
      special(t, "fifo", TarArchiveEntry.LF_FIFO, null);
    }));
    hostile.put("an unknown type", tarGz(t -> {
      file(t, "first.txt", "x");
      special(t, "odd", (byte) 'Z', null);
    }));
    hostile.put("an entry through the sandbox's link", tarGz(t -> {
      file(t, "first.txt", "x");
      file(t, "out/planted", "x");
    }));
    hostile.put("a file replacing a directory", tarGz(t -> {
      file(t, "first.txt", "x");
      file(t, "keep", "x");
    }));
    for (var e : hostile.entrySet()) {
      // the last two only clash with what the sandbox holds at its top
      boolean sandboxOnly = e.getKey().contains("sandbox's link") || e.getKey().contains("replacing");
      for (String at : sandboxOnly ? new String[] {"."} : new String[] {".", "fresh/dir"}) {
        HttpResponse<byte[]> r = request("PUT", id, "/files/archive", at, e.getValue(), key);
        assertThat(r.statusCode()).as(e.getKey() + " at " + at + ": " + text(r)).isEqualTo(422);
        assertThat(new JsonObject(text(r)).getString("detail")).as(e.getKey()).startsWith("archive ");
      }
    }
    assertThat(run(id, "find . | sort")).isEqualTo(before);
    assertThat(Path.of("/etc/planted")).doesNotExist();
  }

  /** Under bubblewrap with the gateway as root (as in CI) the sandbox directory is its own uid's. */
  @Test
  void an_extracted_archive_belongs_to_the_sandbox_owner_links_included() throws Exception {
    assumeTrue(Files.getOwner(Path.of("/proc/self"), LinkOption.NOFOLLOW_LINKS).getName().equals("root"),
        "the gateway runs as root");
    String id = sandbox("bwrap");
    byte[] fine = tarGz(t -> {
      special(t, "dir/", TarArchiveEntry.LF_DIR, null);
      file(t, "dir/f.txt", "hello");
      special(t, "dir/link", TarArchiveEntry.LF_SYMLINK, "f.txt");
      special(t, "dir/here", TarArchiveEntry.LF_SYMLINK, ".");
    });
    HttpResponse<byte[]> ok = request("PUT", id, "/files/archive", "new/place", fine, key);
    assertThat(ok.statusCode()).as(text(ok)).isEqualTo(201);
    Path root = dir(id);
    var owner = Files.getOwner(root, LinkOption.NOFOLLOW_LINKS);
    assertThat(owner).as("the sandbox's own uid owns its directory").isNotEqualTo(
        Files.getOwner(gw.dataDir, LinkOption.NOFOLLOW_LINKS));
    for (String p : new String[] {"new", "new/place", "new/place/dir", "new/place/dir/f.txt", "new/place/dir/link",
        "new/place/dir/here"}) {
      assertThat(Files.getOwner(root.resolve(p), LinkOption.NOFOLLOW_LINKS)).as(p).isEqualTo(owner);
    }
    assertThat(run(id, "cat new/place/dir/link")).isEqualTo("hello");
  }

  // ---- item 14: listings -------------------------------------------------------------------------------------

  @ParameterizedTest
  @ValueSource(strings = {"local", "bwrap"})
  void a_listing_reports_links_as_links(String backend) throws Exception {
    String id = sandbox(backend);
    run(id, "ln -s /etc/passwd tok && mkdir sub && echo 12345 > sub/f");
    JsonArray entries = gw.send("GET", "/v1/sandboxes/" + id + "/files?path=.", key, null).json()
        .getJsonArray("entries");
    JsonObject tok = entries.stream().map(o -> (JsonObject) o).filter(o -> o.getString("name").equals("tok"))
        .findFirst().orElseThrow();
    assertThat(tok.getString("type")).isEqualTo("symlink");
    assertThat(tok.getBoolean("is_dir")).isFalse();
    assertThat(tok.getLong("size")).isZero();
    assertThat(tok.getString("mode")).isEqualTo("0777");
    assertThat(entries.stream().map(o -> ((JsonObject) o).getString("name") + " " + ((JsonObject) o).getString("type")))
        .contains("sub directory", "tok symlink");
    JsonArray one = gw.send("GET", "/v1/sandboxes/" + id + "/files?path=tok", key, null).json().getJsonArray("entries");
    assertThat(one.getJsonObject(0).getString("type")).isEqualTo("symlink");
    JsonArray sub = gw.send("GET", "/v1/sandboxes/" + id + "/files?path=sub", key, null).json().getJsonArray("entries");
    assertThat(sub.getJsonObject(0).getString("type")).isEqualTo("file");
    assertThat(sub.getJsonObject(0).getLong("size")).isEqualTo(6L);
  }

  // ---- item 15: deep paths -----------------------------------------------------------------------------------

  @ParameterizedTest
  @ValueSource(strings = {"local", "bwrap"})
  void an_upload_too_deep_answers_422_and_a_failed_upload_leaves_nothing(String backend) throws Exception {
    String id = sandbox(backend);
    run(id, "echo x > plain");
    String before = run(id, "find . | sort");
    HttpResponse<byte[]> deep = put(id, "a/".repeat(2000) + "f", "x");
    assertThat(deep.statusCode()).as(text(deep)).isEqualTo(422);
    assertThat(new JsonObject(text(deep)).getString("detail")).isEqualTo("path is too deep: at most 128 levels");
    assertThat(put(id, "b/".repeat(128) + "f", "x").statusCode()).isEqualTo(422);
    assertThat(put(id, "c/".repeat(127) + "f", "x").statusCode()).isEqualTo(201);
    run(id, "rm -r c");
    // a parent that is a file: refused
    HttpResponse<byte[]> underFile = put(id, "plain/x/y", "x");
    assertThat(underFile.statusCode()).as(text(underFile)).isEqualTo(422);
    assertThat(run(id, "find . | sort")).isEqualTo(before);
    // nothing stays in the gateway's staging directory either
    Path staging = dir(id).getParent().resolve(".files-staging");
    if (Files.exists(staging)) {
      try (var left = Files.list(staging)) {
        assertThat(left).isEmpty();
      }
    }
  }

  @Test
  void bad_paths_still_get_their_documented_answers() {
    String id = sandbox("bwrap");
    for (String bad : new String[] {"../x", "a/../../x", "/etc/passwd", "/sandbox/../etc/passwd"}) {
      HttpResponse<byte[]> r = get(id, bad);
      assertThat(r.statusCode()).as(bad).isEqualTo(422);
      assertThat(new JsonObject(text(r)).getString("detail")).isEqualTo("path must stay inside the sandbox");
      assertThat(put(id, bad, "x").statusCode()).as(bad).isEqualTo(422);
      assertThat(request("DELETE", id, "/files", bad, null, key).statusCode()).as(bad).isEqualTo(422);
    }
    assertThat(get(id, "a\u0000b").statusCode()).isEqualTo(422);
    assertThat(request("DELETE", id, "/files", ".", null, key).statusCode()).isEqualTo(422);
    assertThat(get(id, "/sandbox/missing").statusCode()).isEqualTo(404);
  }
}
