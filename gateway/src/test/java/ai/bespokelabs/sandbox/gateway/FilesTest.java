package ai.bespokelabs.sandbox.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.gateway.TestGateway.Resp;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.HexFormat;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The files API on the host-directory backends: round trips, modes, escapes and the upload limit. */
class FilesTest {
  static final long LIMIT = 32L << 20;
  @RegisterExtension
  static final GatewayExtension GATEWAY = new GatewayExtension(() -> Map.of(
      "BESPOKE_MAX_UPLOAD_BYTES", String.valueOf(LIMIT)));
  static TestGateway gw;
  static String key;

  @BeforeAll
  static void start() {
    key = gw.bootstrap("Files");
  }

  static String q(String s) {
    return URLEncoder.encode(s, StandardCharsets.UTF_8);
  }

  static final java.net.http.HttpClient HTTP1 = java.net.http.HttpClient.newBuilder()
      .version(java.net.http.HttpClient.Version.HTTP_1_1).build();

  static HttpResponse<String> put(String id, String path, HttpRequest.BodyPublisher body, String extra)
      throws Exception {
    return HTTP1.send(HttpRequest.newBuilder(URI.create(gw.base + "/v1/sandboxes/" + id + "/files/content?path="
            + q(path) + extra)).header("Authorization", "Bearer " + key).timeout(Duration.ofSeconds(120))
        .PUT(body).build(), HttpResponse.BodyHandlers.ofString());
  }

  static HttpResponse<InputStream> get(String id, String path) throws Exception {
    return gw.client.send(HttpRequest.newBuilder(URI.create(gw.base + "/v1/sandboxes/" + id + "/files/content?path="
            + q(path))).header("Authorization", "Bearer " + key).timeout(Duration.ofSeconds(120)).GET().build(),
        HttpResponse.BodyHandlers.ofInputStream());
  }

  static String text(HttpResponse<InputStream> r) throws IOException {
    try (InputStream in = r.body()) {
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }

  /** A deterministic byte stream of {@code size} bytes whose SHA-256 is computed as it is read. */
  static final class Generated extends InputStream {
    final MessageDigest sha;
    long left;
    long state = 0x9E3779B97F4A7C15L;

    Generated(long size) {
      this.left = size;
      try {
        this.sha = MessageDigest.getInstance("SHA-256");
      } catch (java.security.NoSuchAlgorithmException e) {
        throw new IllegalStateException(e);
      }
    }

    @Override
    public int read() {
      byte[] one = new byte[1];
      return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
    }

    @Override
    public int read(byte[] b, int off, int len) {
      if (left == 0) {
        return -1;
      }
      int n = (int) Math.min(len, left);
      for (int i = 0; i < n; i++) {
        state ^= state << 13;
        state ^= state >>> 7;
        state ^= state << 17;
        b[off + i] = (byte) state;
      }
      sha.update(b, off, n);
      left -= n;
      return n;
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"local", "bwrap"})
  void files_round_trip_with_modes_and_nothing_escapes(String backend) throws Exception {
    JsonObject sbx = gw.sandbox(key, new JsonObject().put("backend", backend).put("allow_internet", false));
    String id = sbx.getString("id");

    HttpResponse<String> up = put(id, "work/run.sh", HttpRequest.BodyPublishers.ofString("#!/bin/sh\necho ran $1\n"),
        "&executable=true");
    assertThat(up.statusCode()).as(up.body()).isEqualTo(201);
    JsonObject entry = new JsonObject(up.body());
    assertThat(entry.getString("name")).isEqualTo("run.sh");
    assertThat(entry.getLong("size")).isEqualTo(22L);
    assertThat(entry.getString("mode")).isEqualTo("0755");
    assertThat(entry.getBoolean("is_dir")).isFalse();
    // the path is where the sandbox's programs see the file
    Resp ran = gw.post("/v1/sandboxes/" + id + "/execute", key, new JsonObject().put("command", entry.getString("path"))
        .put("args", new JsonArray().add("ok")));
    assertThat(ran.json().getString("stdout")).isEqualTo("ran ok\n");
    assertThat(put(id, "work/data.txt", HttpRequest.BodyPublishers.ofString("héllo"), "").statusCode()).isEqualTo(201);

    JsonObject listed = gw.get("/v1/sandboxes/" + id + "/files?path=work", key).json();
    assertThat(listed.getJsonArray("entries").stream().map(o -> ((JsonObject) o).getString("name") + " "
        + ((JsonObject) o).getString("mode"))).containsExactly("data.txt 0644", "run.sh 0755");
    assertThat(text(get(id, "work/data.txt"))).isEqualTo("héllo");
    // a program's output is readable the same way
    gw.post("/v1/sandboxes/" + id + "/execute", key, new JsonObject().put("command", "mkdir -p out; echo result > out/r.txt"));
    assertThat(text(get(id, "out/r.txt"))).isEqualTo("result\n");

    // escapes are refused: .., absolute paths outside, and symlinks pointing out
    gw.post("/v1/sandboxes/" + id + "/execute", key, new JsonObject().put("command", "ln -s /etc/hostname link"));
    for (String bad : new String[] {"../x", "work/../../x", "/etc/hostname"}) {
      HttpResponse<InputStream> r = get(id, bad);
      assertThat(r.statusCode()).as(bad).isEqualTo(422);
      assertThat(new JsonObject(text(r)).getString("detail")).isEqualTo("path must stay inside the sandbox");
    }
    // links are never followed, wherever they point
    HttpResponse<InputStream> viaLink = get(id, "link");
    assertThat(viaLink.statusCode()).isEqualTo(422);
    assertThat(new JsonObject(text(viaLink)).getString("detail"))
        .isEqualTo("path names or goes through a symbolic link; links are not followed");
    assertThat(put(id, "../outside.txt", HttpRequest.BodyPublishers.ofString("x"), "").statusCode()).isEqualTo(422);
    assertThat(put(id, "link", HttpRequest.BodyPublishers.ofString("x"), "").statusCode()).isEqualTo(422);
    HttpResponse<InputStream> missing = get(id, "work/nope.txt");
    assertThat(missing.statusCode()).isEqualTo(404);
    assertThat(new JsonObject(text(missing)).getString("detail")).isEqualTo("file not found");
    assertThat(get(id, "work").statusCode()).isEqualTo(422);

    assertThat(gw.delete("/v1/sandboxes/" + id + "/files?path=work", key).status()).isEqualTo(409);
    assertThat(gw.delete("/v1/sandboxes/" + id + "/files?path=work/data.txt", key).status()).isEqualTo(204);
    assertThat(gw.delete("/v1/sandboxes/" + id + "/files?path=work&recursive=true", key).status()).isEqualTo(204);
    assertThat(gw.get("/v1/sandboxes/" + id + "/files?path=work", key).status()).isEqualTo(404);
    gw.delete("/v1/sandboxes/" + id, key);
  }

  /** A tar.gz built here, e.g. with an entry that tries to leave the directory. */
  static byte[] tarGz(String name, String content) throws Exception {
    java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
    try (var tar = new org.apache.commons.compress.archivers.tar.TarArchiveOutputStream(
        new org.apache.commons.compress.compressors.gzip.GzipCompressorOutputStream(bytes))) {
      var e = new org.apache.commons.compress.archivers.tar.TarArchiveEntry(name);
      byte[] data = content.getBytes(StandardCharsets.UTF_8);
      e.setSize(data.length);
      tar.putArchiveEntry(e);
      tar.write(data);
      tar.closeArchiveEntry();
    }
    return bytes.toByteArray();
  }

  static HttpResponse<String> putArchive(String id, String path, byte[] body) throws Exception {
    return putArchive(gw, key, id, path, body);
  }

  static HttpResponse<String> putArchive(TestGateway g, String k, String id, String path, byte[] body)
      throws Exception {
    return HTTP1.send(HttpRequest.newBuilder(URI.create(g.base + "/v1/sandboxes/" + id + "/files/archive?path="
            + q(path))).header("Authorization", "Bearer " + k).PUT(HttpRequest.BodyPublishers.ofByteArray(body))
        .build(), HttpResponse.BodyHandlers.ofString());
  }

  static byte[] getArchive(String id, String path) throws Exception {
    return getArchive(gw, key, id, path);
  }

  static byte[] getArchive(TestGateway g, String k, String id, String path) throws Exception {
    HttpResponse<byte[]> r = g.client.send(HttpRequest.newBuilder(URI.create(g.base + "/v1/sandboxes/" + id
        + "/files/archive?path=" + q(path))).header("Authorization", "Bearer " + k).GET().build(),
        HttpResponse.BodyHandlers.ofByteArray());
    assertThat(r.statusCode()).as(new String(r.body(), StandardCharsets.UTF_8)).isEqualTo(200);
    return r.body();
  }

  static String run(String id, String command) {
    return gw.post("/v1/sandboxes/" + id + "/execute", key, new JsonObject().put("command", command)).json()
        .getString("stdout");
  }

  @ParameterizedTest
  @ValueSource(strings = {"local", "bwrap"})
  void a_directory_round_trips_as_tar_gz_with_structure_modes_and_links(String backend) throws Exception {
    String from = gw.sandbox(key, new JsonObject().put("backend", backend).put("allow_internet", false)).getString("id");
    String to = gw.sandbox(key, new JsonObject().put("backend", backend).put("allow_internet", false)).getString("id");
    run(from, "mkdir -p tree/sub/deeper tree/empty && echo top > tree/a.txt && printf '#!/bin/sh\necho hi\n' >"
        + " tree/sub/run.sh && chmod 755 tree/sub/run.sh && chmod 600 tree/a.txt && echo deep > tree/sub/deeper/d.txt"
        + " && ln -s ../a.txt tree/sub/link");
    byte[] archive = getArchive(from, "tree");
    HttpResponse<String> up = putArchive(to, "copy/here", archive);
    assertThat(up.statusCode()).as(up.body()).isEqualTo(201);
    String listing = "cd $1 && find . | sort && stat -c '%n %a' a.txt sub/run.sh && readlink sub/link && sub/run.sh";
    assertThat(run(to, listing.replace("$1", "copy/here"))).isEqualTo(run(from, listing.replace("$1", "tree")));
    assertThat(run(to, "cat copy/here/sub/deeper/d.txt copy/here/sub/link")).isEqualTo("deep\ntop\n");

    // a broken archive or one leaving the directory changes nothing
    assertThat(putArchive(to, "broken", "not a tar.gz".getBytes(StandardCharsets.UTF_8)).statusCode()).isEqualTo(422);
    byte[] truncated = java.util.Arrays.copyOf(archive, archive.length / 2);
    assertThat(putArchive(to, "broken", truncated).statusCode()).isEqualTo(422);
    HttpResponse<String> escaping = putArchive(to, "broken", tarGz("../escaped.txt", "x"));
    assertThat(escaping.statusCode()).isEqualTo(422);
    assertThat(new JsonObject(escaping.body()).getString("detail")).contains("leaves the directory");
    assertThat(gw.get("/v1/sandboxes/" + to + "/files?path=broken", key).status()).isEqualTo(404);
    assertThat(run(to, "ls")).isEqualTo("copy\n");
    assertThat(gw.get("/v1/sandboxes/" + to + "/files/archive?path=copy/here/a.txt", key).status()).isEqualTo(422);
  }

  @ParameterizedTest
  @ValueSource(longs = {20L << 20})
  void a_large_file_round_trips_with_the_same_digest_and_an_oversized_one_leaves_nothing(long size) throws Exception {
    String id = gw.sandbox(key, null).getString("id");
    Generated data = new Generated(size);
    HttpResponse<String> up = put(id, "big/blob.bin", HttpRequest.BodyPublishers.ofInputStream(() -> data), "");
    assertThat(up.statusCode()).as(up.body()).isEqualTo(201);
    String sent = HexFormat.of().formatHex(data.sha.digest());
    HttpResponse<InputStream> down = get(id, "big/blob.bin");
    assertThat(down.headers().firstValueAsLong("Content-Length")).hasValue(size);
    MessageDigest sha = MessageDigest.getInstance("SHA-256");
    long total = 0;
    try (InputStream in = down.body()) {
      byte[] buf = new byte[1 << 16];
      for (int n; (n = in.read(buf)) > 0; ) {
        sha.update(buf, 0, n);
        total += n;
      }
    }
    assertThat(total).isEqualTo(size);
    assertThat(HexFormat.of().formatHex(sha.digest())).isEqualTo(sent);

    // over the limit: refused from Content-Length at once, or while streaming without one; nothing is left
    Path dir = Path.of(gw.get("/v1/sandboxes/" + id, key).json().getString("provider_resource_id"));
    HttpResponse<String> declared = put(id, "new/too-big.bin", HttpRequest.BodyPublishers.fromPublisher(
        HttpRequest.BodyPublishers.ofInputStream(() -> new Generated(LIMIT + 1)), LIMIT + 1), "");
    assertThat(declared.statusCode()).isEqualTo(413);
    Generated tooMuch = new Generated(LIMIT + (1 << 20));
    HttpResponse<String> streamed = put(id, "new/deeper/too-big.bin",
        HttpRequest.BodyPublishers.ofInputStream(() -> tooMuch), "");
    assertThat(streamed.statusCode()).isEqualTo(413);
    assertThat(new JsonObject(streamed.body()).getString("detail")).contains("upload limit");
    assertThat(dir.resolve("new")).doesNotExist();
    try (var files = Files.list(dir.resolve("big"))) {
      assertThat(files.map(p -> p.getFileName().toString())).containsExactly("blob.bin");
    }
  }
}
