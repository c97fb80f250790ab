package ai.bespokelabs.sandbox.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.testkit.SseClient;
import ai.bespokelabs.sandbox.testkit.SseClient.Event;
import ai.bespokelabs.sandbox.gateway.TestGateway.Resp;
import ai.bespokelabs.sandbox.testkit.Waits;
import ai.bespokelabs.sandbox.testkit.WsClient;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonObject;
import java.io.ByteArrayOutputStream;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** Streaming executions over SSE and WebSocket against a real gateway and real processes. */
@ExtendWith(GatewayExtension.class)
class StreamingTest {
  static TestGateway gw;
  static String key;
  static String sandbox;
  static Path dir;

  @BeforeAll
  static void start() {
    key = gw.bootstrap("Acme");
    JsonObject sbx = gw.sandbox(key, null);
    sandbox = sbx.getString("id");
    dir = Path.of(sbx.getString("provider_resource_id"));
  }

  static String url(String path) {
    return gw.base + "/v1/sandboxes/" + sandbox + path;
  }

  static SseClient executeSse(JsonObject body) {
    return SseClient.open(url("/execute"), key, "POST", body.encode());
  }

  static String startExecution(JsonObject body) {
    Resp r = gw.post("/v1/sandboxes/" + sandbox + "/executions", key, body);
    assertThat(r.status()).isEqualTo(202);
    return r.json().getString("id");
  }

  static JsonObject awaitFinished(String executionId) {
    return Waits.upTo(30).alias("execution finished").until(
        () -> gw.get("/v1/sandboxes/" + sandbox + "/executions/" + executionId, key).json(),
        e -> !"running".equals(e.getString("status")));
  }

  static String sha256(byte[] data) throws Exception {
    return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(data));
  }

  /** Writes {@code mib} MiB of random bytes into the sandbox and returns their SHA-256. */
  static String randomFile(String name, int mib) throws Exception {
    byte[] data = new byte[mib << 20];
    new java.util.Random(42 + mib).nextBytes(data);
    Files.write(dir.resolve(name), data);
    return sha256(data);
  }

  @Test
  void sse_delivers_100_mib_of_random_bytes_exactly() throws Exception {
    String expected = randomFile("random-sse.bin", 100);
    MessageDigest digest = MessageDigest.getInstance("SHA-256");
    long bytes = 0;
    long lastSeq = 0;
    boolean notice = false;
    JsonObject exit = null;
    try (SseClient sse = executeSse(new JsonObject().put("command", "cat random-sse.bin"))) {
      assertThat(sse.status).isEqualTo(200);
      assertThat(sse.contentType).startsWith("text/event-stream");
      Event e;
      while ((e = sse.next()) != null) {
        if (e.isOutput()) {
          assertThat(Long.parseLong(e.id())).isGreaterThan(lastSeq);
          lastSeq = Long.parseLong(e.id());
          byte[] b = e.bytes();
          digest.update(b);
          bytes += b.length;
        } else if (e.name().equals("notice")) {
          notice = true;
          lastSeq = Long.parseLong(e.id());
        } else if (e.name().equals("exit")) {
          exit = e.data();
        }
      }
    }
    assertThat(bytes).isEqualTo(100L << 20);
    assertThat(HexFormat.of().formatHex(digest.digest())).isEqualTo(expected);
    assertThat(notice).as("the stored-output cap is announced").isTrue();
    assertThat(exit.getString("status")).isEqualTo("completed");
    assertThat(exit.getBoolean("stdout_truncated")).isTrue();
    assertThat(exit.getLong("last_seq")).isEqualTo(lastSeq);
  }

  /** A WebSocket client whose binary frames (a 9-byte header, then output) are counted and hashed. */
  static final class BinaryOutput implements java.util.function.Consumer<Buffer> {
    final MessageDigest digest;
    long bytes;

    BinaryOutput() throws Exception {
      digest = MessageDigest.getInstance("SHA-256");
    }

    @Override
    public void accept(Buffer frame) {
      byte[] b = frame.getBytes();
      digest.update(b, 9, b.length - 9);
      bytes += b.length - 9;
    }
  }

  static WsClient ws(String path) {
    return WsClient.connect(url(path), key);
  }

  @Test
  void websocket_binary_mode_delivers_100_mib_exactly() throws Exception {
    String expected = randomFile("random-ws.bin", 100);
    BinaryOutput out = new BinaryOutput();
    WsClient c = WsClient.connect(url("/executions/ws?mode=binary"), key, out);
    c.send(new JsonObject().put("type", "start").put("command", "cat random-ws.bin").encode());
    assertThat(c.nextJson().getString("type")).isEqualTo("started");
    assertThat(c.closeStatus(seconds(120))).isEqualTo(1000);
    assertThat(out.bytes).isEqualTo(100L << 20);
    assertThat(HexFormat.of().formatHex(out.digest.digest())).isEqualTo(expected);
    List<String> types = c.pending().stream().map(f -> f.getString("type")).toList();
    assertThat(types).contains("notice").endsWith("exit");
  }

  @Test
  void websocket_text_mode_round_trips_stdin_through_cat() throws Exception {
    WsClient c = ws("/executions/ws");
    c.send("not json");
    assertThat(c.nextJson().getString("type")).isEqualTo("error");
    c.send(new JsonObject().put("type", "start").put("command", "cat").put("stdin", true).encode());
    assertThat(c.nextJson().getString("type")).isEqualTo("started");
    c.send(new JsonObject().put("type", "stdin").put("data", "héllo\n").encode());
    c.send(new JsonObject().put("type", "stdin").put("data_b64", "AAEC").encode());
    c.send(new JsonObject().put("type", "stdin_eof").encode());
    StringBuilder text = new StringBuilder();
    ByteArrayOutputStream all = new ByteArrayOutputStream();
    JsonObject f;
    while (!(f = c.nextJson()).getString("type").equals("exit")) {
      if (f.getString("type").equals("stdout")) {
        byte[] b = f.containsKey("data") ? f.getString("data").getBytes(StandardCharsets.UTF_8)
            : java.util.Base64.getDecoder().decode(f.getString("data_b64"));
        all.writeBytes(b);
      }
    }
    text.append(new String(all.toByteArray(), 0, 7, StandardCharsets.UTF_8));
    assertThat(text.toString()).isEqualTo("héllo\n");
    assertThat(all.toByteArray()).endsWith(new byte[] {0, 1, 2});
    assertThat(f.getString("status")).isEqualTo("completed");
    assertThat(c.closeStatus(seconds(10))).isEqualTo(1000);
  }

  @Test
  void malformed_frames_get_errors_and_oversized_frames_close_with_1009() throws Exception {
    String id = startExecution(new JsonObject().put("command", "sleep 5").put("stdin", true));
    WsClient c = ws("/executions/" + id + "/ws");
    c.send("[1,2]");
    assertThat(c.nextJson().getString("message")).isEqualTo("frames must be JSON objects");
    c.send(new JsonObject().put("type", "dance").encode());
    assertThat(c.nextJson().getString("type")).isEqualTo("error");
    c.send(new JsonObject().put("type", "signal").put("signal", "HUP").encode());
    assertThat(c.nextJson().getString("message")).isEqualTo("signal must be one of TERM, KILL, INT");
    c.send(new JsonObject().put("type", "stdin").put("data_b64", "@@@").encode());
    assertThat(c.nextJson().getString("message")).isEqualTo("data_b64 is not valid base64");
    c.write("x".repeat((1 << 20) + 10));
    assertThat(c.closeStatus(seconds(10))).isEqualTo(1009);
    gw.post("/v1/sandboxes/" + sandbox + "/executions/" + id + "/signal", key,
        new JsonObject().put("signal", "KILL"));
  }

  @Test
  void a_client_that_disconnects_and_resumes_with_last_event_id_gets_every_byte_once() throws Exception {
    String id = startExecution(new JsonObject()
        .put("command", "seq 1 40000; sleep 0.5; seq 40001 80000; printf no-newline-tail"));
    ByteArrayOutputStream got = new ByteArrayOutputStream();
    String last;
    try (SseClient first = SseClient.open(url("/executions/" + id + "/stream"), key, "GET", null)) {
      Event e = first.next();
      assertThat(e.isOutput()).isTrue();
      got.writeBytes(e.bytes());
      last = e.id();
    }
    try (SseClient again = SseClient.open(url("/executions/" + id + "/stream"), key, "GET", null,
        "Last-Event-ID", last)) {
      Event e;
      long prev = Long.parseLong(last);
      while ((e = again.next()) != null) {
        if (e.isOutput()) {
          assertThat(Long.parseLong(e.id())).isEqualTo(prev + 1);
          prev = Long.parseLong(e.id());
          got.writeBytes(e.bytes());
        }
        assertThat(e.name()).isNotEqualTo("gap");
      }
    }
    StringBuilder expected = new StringBuilder();
    for (int i = 1; i <= 80000; i++) {
      expected.append(i).append('\n');
    }
    expected.append("no-newline-tail");
    assertThat(got.toString(StandardCharsets.UTF_8)).isEqualTo(expected.toString());
    JsonObject done = awaitFinished(id);
    assertThat(done.getString("status")).isEqualTo("completed");
    Resp bad = gw.send("GET", "/v1/sandboxes/" + sandbox + "/executions/" + id + "/stream?after=-1", key, null);
    assertThat(bad.status()).isEqualTo(422);
  }

  @Test
  void output_that_left_the_journal_is_reported_as_a_gap_with_its_size() throws Exception {
    String id = startExecution(new JsonObject().put("command", "head -c 3145728 /dev/zero | tr '\\0' 'x'"));
    awaitFinished(id);
    long received = 0;
    long gapBytes = -1;
    try (SseClient sse = SseClient.open(url("/executions/" + id + "/stream?after=0"), key, "GET", null)) {
      Event first = sse.next();
      assertThat(first.name()).isEqualTo("gap");
      gapBytes = first.data().getLong("bytes");
      assertThat(first.data().getLong("from_seq")).isEqualTo(1L);
      Event e;
      while ((e = sse.next()) != null) {
        if (e.isOutput()) {
          received += e.bytes().length;
        }
      }
    }
    assertThat(gapBytes).isPositive();
    assertThat(gapBytes + received).isEqualTo(3L << 20);
  }

  /** Writes 256 MiB to stdout, noting in the file {@code progress} (every MiB) how much it wrote so far. */
  static final String FLOOD = "import sys, os\n"
      + "chunk = b'y' * 65536\n"
      + "for i in range(1, 4097):\n"
      + "    sys.stdout.buffer.write(chunk); sys.stdout.flush()\n"
      + "    if i % 16 == 0:\n"
      + "        open('progress.tmp', 'w').write(str(i * 65536)); os.replace('progress.tmp', 'progress')\n";

  @Test
  void a_slow_reader_throttles_the_program_and_keeps_the_heap_bounded() throws Exception {
    long heapBefore = usedHeapAfterGc();
    long consumed = 0;
    long peakHeap = 0;
    try (SseClient sse = SseClient.openSlowReader(url("/execute"), key, "POST",
        new JsonObject().put("code", FLOOD).encode())) {
      assertThat(sse.status).isEqualTo(200);
      long t0 = System.nanoTime();
      List<Event> others = new ArrayList<>();
      while (System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(4)) {
        Event e = sse.next();
        assertThat(e).as("the stream ended early after %s", others).isNotNull();
        if (!e.isOutput()) {
          others.add(e);
        }
        if (e.isOutput()) {
          consumed += e.bytes().length;
        }
        // slow by the byte (about 16 MB/s at most), whatever size the chunks have
        Thread.sleep(Math.max(2, e.isOutput() ? e.bytes().length / 16384 : 0));
      }
      long produced = Long.parseLong(Files.readString(dir.resolve("progress")).trim());
      peakHeap = usedHeapAfterGc();
      assertThat(produced).as("the program is held back by the slow reader").isLessThan(256L << 20);
      assertThat(produced - consumed).as("bytes in flight stay bounded").isLessThan(24L << 20);
    }
    assertThat(peakHeap - heapBefore).as("heap growth while throttled").isLessThan(64L << 20);
  }

  static long usedHeapAfterGc() {
    System.gc();
    return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
  }

  @Test
  void stdin_over_rest_and_finished_or_closed_stdin_is_409() throws Exception {
    String id = startExecution(new JsonObject().put("command", "cat").put("stdin", true));
    Resp w = gw.send("POST", "/v1/sandboxes/" + sandbox + "/executions/" + id + "/stdin", key, "abc");
    assertThat(w.status()).isEqualTo(204);
    assertThat(gw.send("POST", "/v1/sandboxes/" + sandbox + "/executions/" + id + "/stdin?eof=true", key, "def")
        .status()).isEqualTo(204);
    JsonObject done = awaitFinished(id);
    assertThat(done.getString("stdout")).isEqualTo("abcdef");
    Resp late = gw.send("POST", "/v1/sandboxes/" + sandbox + "/executions/" + id + "/stdin", key, "x");
    assertThat(late.status()).isEqualTo(409);
    assertThat(late.detail()).isEqualTo("execution has finished");
    String closed = startExecution(new JsonObject().put("command", "sleep 2"));
    Resp notOpen = gw.send("POST", "/v1/sandboxes/" + sandbox + "/executions/" + closed + "/stdin", key, "x");
    assertThat(notOpen.status()).isEqualTo(409);
    assertThat(notOpen.detail()).isEqualTo("stdin is not open for this execution");
  }

  @Test
  void a_signal_kills_the_whole_process_tree_and_the_execution_is_cancelled() throws Exception {
    String id = startExecution(new JsonObject().put("command", "sleep 300 & echo $! > bg.pid; sleep 300"));
    Path pidFile = dir.resolve("bg.pid");
    // The redirection creates the file before echo writes the pid: wait for the full line.
    Waits.upTo(10).until(() -> Files.exists(pidFile) && Files.readString(pidFile).endsWith("\n"));
    long bg = Long.parseLong(Files.readString(pidFile).trim());
    assertThat(ProcessHandle.of(bg).map(ProcessHandle::isAlive)).contains(true);
    Resp sig = gw.post("/v1/sandboxes/" + sandbox + "/executions/" + id + "/signal", key,
        new JsonObject().put("signal", "TERM"));
    assertThat(sig.status()).isEqualTo(204);
    JsonObject done = awaitFinished(id);
    assertThat(done.getString("status")).isEqualTo("cancelled");
    Waits.upTo(5).untilAsserted(
        () -> assertThat(isRunning(bg)).as("the background child died with its group").isFalse());
    Resp again = gw.post("/v1/sandboxes/" + sandbox + "/executions/" + id + "/signal", key,
        new JsonObject().put("signal", "KILL"));
    assertThat(again.status()).isEqualTo(409);
    assertThat(gw.post("/v1/sandboxes/" + sandbox + "/executions/" + id + "/signal", key,
        new JsonObject().put("signal", "HUP")).status()).isEqualTo(422);
  }

  /** Alive and not a zombie (a zombie's /proc state is Z). */
  static boolean isRunning(long pid) throws Exception {
    Path stat = Path.of("/proc/" + pid + "/stat");
    if (!Files.exists(stat)) {
      return false;
    }
    String s = Files.readString(stat);
    return s.charAt(s.lastIndexOf(')') + 2) != 'Z';
  }

  @Test
  void a_timeout_ends_the_stream_with_status_timed_out() {
    try (SseClient sse = executeSse(new JsonObject().put("command", "echo before; sleep 30").put("timeout_secs", 1))) {
      List<Event> events = new ArrayList<>();
      Event e;
      while ((e = sse.next()) != null) {
        events.add(e);
      }
      assertThat(events.get(0).name()).isEqualTo("started");
      assertThat(events.get(0).data().getString("execution_id")).startsWith("exe_");
      assertThat(events.get(1).data().getString("data")).isEqualTo("before\n");
      JsonObject exit = events.get(events.size() - 1).data();
      assertThat(exit.getString("status")).isEqualTo("timed_out");
      assertThat(exit.getInteger("exit_code")).isEqualTo(124);
    }
  }

  @Test
  void several_clients_watch_one_execution() throws Exception {
    String id = startExecution(new JsonObject().put("command", "sleep 0.5; seq 1 20000"));
    ExecutorService pool = Executors.newFixedThreadPool(3);
    List<CompletableFuture<String>> watchers = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      watchers.add(CompletableFuture.supplyAsync(() -> {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (SseClient sse = SseClient.open(url("/executions/" + id + "/stream"), key, "GET", null)) {
          Event e;
          while ((e = sse.next()) != null) {
            if (e.isOutput()) {
              out.writeBytes(e.bytes());
            }
          }
        }
        return out.toString(StandardCharsets.UTF_8);
      }, pool));
    }
    StringBuilder expected = new StringBuilder();
    for (int i = 1; i <= 20000; i++) {
      expected.append(i).append('\n');
    }
    for (CompletableFuture<String> w : watchers) {
      assertThat(w.get(60, TimeUnit.SECONDS)).isEqualTo(expected.toString());
    }
    pool.shutdown();
  }

  @Test
  void two_hundred_concurrent_streams_all_complete() throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(200);
    List<CompletableFuture<String>> streams = new ArrayList<>();
    for (int i = 0; i < 200; i++) {
      int n = i;
      streams.add(CompletableFuture.supplyAsync(() -> {
        StringBuilder out = new StringBuilder();
        String status = null;
        try (SseClient sse = executeSse(new JsonObject().put("command", "seq 1 " + (1000 + n)))) {
          Event e;
          while ((e = sse.next()) != null) {
            if (e.isOutput()) {
              out.append(new String(e.bytes(), StandardCharsets.UTF_8));
            } else if (e.name().equals("exit")) {
              status = e.data().getString("status");
            }
          }
        }
        StringBuilder expected = new StringBuilder();
        for (int k = 1; k <= 1000 + n; k++) {
          expected.append(k).append('\n');
        }
        boolean whole = out.toString().contentEquals(expected);
        return "completed".equals(status) && whole ? "" : "stream " + n + ": status " + status + ", "
            + out.length() + " of " + expected.length() + " bytes" + (whole ? "" : ", first " + out.substring(0,
                Math.min(200, out.length())));
      }, pool));
    }
    for (CompletableFuture<String> s : streams) {
      assertThat(s.get(120, TimeUnit.SECONDS)).isEmpty();
    }
    pool.shutdown();
  }

  @Test
  void a_vanished_client_does_not_hold_the_program_back() throws Exception {
    String id;
    try (SseClient sse = executeSse(new JsonObject().put("command", "head -c 52428800 /dev/zero"))) {
      sse.next();
      id = gw.get("/v1/sandboxes/" + sandbox + "/detail", key).json().getJsonArray("executions")
          .getJsonObject(0).getString("id");
    }
    JsonObject done = awaitFinished(id);
    assertThat(done.getString("status")).isEqualTo("completed");
    assertThat(done.getBoolean("stdout_truncated")).isTrue();
  }

  @Test
  void unknown_or_foreign_executions_are_404() {
    String other = gw.bootstrap("Other");
    String id = startExecution(new JsonObject().put("command", "true"));
    assertThat(gw.get("/v1/sandboxes/" + sandbox + "/executions/exe_" + "0".repeat(32), key).status()).isEqualTo(404);
    assertThat(gw.get("/v1/sandboxes/" + sandbox + "/executions/nope", key).status()).isEqualTo(404);
    assertThat(gw.get("/v1/sandboxes/" + sandbox + "/executions/" + id, other).status()).isEqualTo(404);
    assertThat(gw.get("/v1/sandboxes/" + sandbox + "/executions/" + id + "/stream", other).status()).isEqualTo(404);
    assertThat(gw.send("POST", "/v1/sandboxes/" + sandbox + "/executions/" + id + "/stdin", other, "x").status())
        .isEqualTo(404);
    String reader = gw.key(key, "sandboxes:read");
    assertThat(gw.post("/v1/sandboxes/" + sandbox + "/executions", reader, new JsonObject().put("command", "true"))
        .detail()).isEqualTo("API key requires scope: sandboxes:execute");
  }

  @Test
  void a_finished_execution_streams_its_stored_result() throws Exception {
    String id = startExecution(new JsonObject().put("command", "printf done"));
    awaitFinished(id);
    try (SseClient sse = SseClient.open(url("/executions/" + id + "/stream"), key, "GET", null)) {
      Event e = sse.next();
      assertThat(e.isOutput()).isTrue();
      assertThat(new String(e.bytes(), StandardCharsets.UTF_8)).isEqualTo("done");
      assertThat(sse.next().name()).isEqualTo("exit");
    }
    Resp dup = gw.post("/v1/sandboxes/" + sandbox + "/executions", key, new JsonObject().put("command", "true"),
        "Idempotency-Key", "start-1");
    Resp replay = gw.post("/v1/sandboxes/" + sandbox + "/executions", key, new JsonObject().put("command", "true"),
        "Idempotency-Key", "start-1");
    assertThat(replay.json().getString("id")).isEqualTo(dup.json().getString("id"));
  }

  static Duration seconds(int s) {
    return Duration.ofSeconds(s);
  }
}
