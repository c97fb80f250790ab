package ai.bespokelabs.sandbox.gateway.clients;

import ai.bespokelabs.sandbox.testkit.CuttingProxy;
import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.cli.Interrupts;
import ai.bespokelabs.sandbox.cli.SandboxCommand;
import ai.bespokelabs.sandbox.gateway.GatewayExtension;
import ai.bespokelabs.sandbox.gateway.TestGateway;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/** The {@code sandbox} command, run in this JVM with its own streams and environment, against a real gateway. */
@ExtendWith(GatewayExtension.class)
class CliTest {
  static TestGateway gw;
  static String key;
  static CuttingProxy proxy;
  @TempDir
  static Path home;

  @BeforeAll
  static void setUp() {
    key = gw.bootstrap("cli-test");
    proxy = new CuttingProxy(URI.create(gw.base).getPort());
  }

  /** What one command printed and its exit code; {@code out} can be read while it runs. */
  record Run(int code, ByteArrayOutputStream outBytes, ByteArrayOutputStream errBytes) {
    String out() {
      return outBytes.toString(StandardCharsets.UTF_8);
    }

    String err() {
      return errBytes.toString(StandardCharsets.UTF_8);
    }
  }

  static Map<String, String> env(boolean withKey) {
    Map<String, String> env = new HashMap<>();
    env.put("HOME", home.toString());
    env.put("XDG_CONFIG_HOME", home.resolve("config").toString());
    if (withKey) {
      env.put("BESPOKE_URL", proxy.url());
      env.put("BESPOKE_API_KEY", key);
    }
    return env;
  }

  static Run run(String stdin, String... args) {
    return run(env(true), stdin, new ByteArrayOutputStream(), args);
  }

  static Run run(Map<String, String> env, String stdin, ByteArrayOutputStream out, String... args) {
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int code = SandboxCommand.run(args, new ByteArrayInputStream(stdin.getBytes(StandardCharsets.UTF_8)),
        new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8), env);
    return new Run(code, out, err);
  }

  static String create() {
    Run r = run("", "create", "--backend", "local", "--timeout", "600");
    assertThat(r.code()).as(r.err()).isZero();
    return r.out().strip();
  }

  @Test
  void loginStoresAPrivateConfigThatLaterCommandsUse() throws Exception {
    Map<String, String> env = env(false);
    Run login = run(env, key + "\n", new ByteArrayOutputStream(), "login", "--url", gw.base);
    assertThat(login.code()).as(login.err()).isZero();
    Path file = home.resolve("config/bespoke-sandbox/config.json");
    assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(file))).isEqualTo("rw-------");
    assertThat(Files.readString(file)).contains(gw.base).contains(key);

    Run ls = run(env, "", new ByteArrayOutputStream(), "ls", "--json");
    assertThat(ls.code()).as(ls.err()).isZero();
    assertThat(new JsonArray(ls.out())).isNotNull();

    Files.delete(file);
    Run none = run(env, "", new ByteArrayOutputStream(), "ls");
    assertThat(none.code()).isEqualTo(1);
    assertThat(none.err()).contains("not logged in");
  }

  @Test
  void sandboxesListShowAndRemove() {
    String id = create();
    assertThat(run("", "ls").out()).contains("ID").contains(id).contains("running");
    Run get = run("", "get", id, "--json");
    assertThat(new JsonObject(get.out()).getString("status")).isEqualTo("running");
    assertThat(run("", "get", id).out()).contains("backend").contains("local");
    Run rm = run("", "rm", id);
    assertThat(rm.code()).isZero();
    assertThat(rm.out()).contains(id + " destroyed");
    assertThat(run("", "ls").out()).doesNotContain(id);
    assertThat(run("", "ls", "--all").out()).contains(id);
    assertThat(run("", "logs", id).out()).contains("system");
  }

  @Test
  void execForwardsPipedStdinAndExitsWithTheProgramsCode() {
    String id = create();
    Run r = run("piped input\nsecond line\n", "exec", id, "--", "sh", "-c", "cat; echo err >&2; exit 7");
    assertThat(r.code()).isEqualTo(7);
    assertThat(r.out()).isEqualTo("piped input\nsecond line\n");
    assertThat(r.err()).isEqualTo("err\n");

    Run line = run("", "exec", id, "--no-stdin", "--", "echo $((6 * 7))");
    assertThat(line.code()).isZero();
    assertThat(line.out()).isEqualTo("42\n");

    Run json = run("", "--json", "exec", id, "--", "echo", "hi");
    assertThat(json.out().lines().map(JsonObject::new).map(o -> o.getString("type")).toList())
        .containsExactly("stdout", "exit");
  }

  @Test
  void execResumesAfterTheConnectionIsCut() throws Exception {
    String id = create();
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    CompletableFuture<Run> running = CompletableFuture.supplyAsync(() -> run(env(true), "", out, "exec", id,
        "--no-stdin", "--", "for i in $(seq 1 150); do echo line $i; done; while [ ! -f go ]; do sleep 0.05; done;"
        + " for i in $(seq 151 300); do echo line $i; done"));
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (!out.toString(StandardCharsets.UTF_8).contains("line 150\n") && System.nanoTime() < deadline) {
      Thread.sleep(5);
    }
    proxy.cut();
    assertThat(gw.send("PUT", "/v1/sandboxes/" + id + "/files/content?path=go", key, "").status()).isEqualTo(201);
    Run r = running.get(60, TimeUnit.SECONDS);
    assertThat(r.code()).as(r.err()).isZero();
    assertThat(r.out().lines().toList())
        .containsExactlyElementsOf(IntStream.rangeClosed(1, 300).mapToObj(i -> "line " + i).toList());
  }

  @Test
  void ctrlCIsForwardedAsASignal() throws Exception {
    String id = create();
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    CompletableFuture<Run> running = CompletableFuture.supplyAsync(() -> run(env(true), "", out, "exec", id,
        "--no-stdin", "--", "echo ready; sleep 60"));
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (!out.toString(StandardCharsets.UTF_8).contains("ready") && System.nanoTime() < deadline) {
      Thread.sleep(5);
    }
    assertThat(Interrupts.fire()).isTrue();
    Run r = running.get(30, TimeUnit.SECONDS);
    assertThat(r.code()).isGreaterThan(128);
  }

  /** The CLI as a user runs it: its own JVM (the same classes), its stdin a pipe, signals from the system. */
  static Process spawn(String... args) throws java.io.IOException {
    List<String> cmd = new java.util.ArrayList<>(List.of(ProcessHandle.current().info().command().orElse("java"),
        "-cp", System.getProperty("java.class.path"), "ai.bespokelabs.sandbox.cli.Main"));
    cmd.addAll(List.of(args));
    ProcessBuilder pb = new ProcessBuilder(cmd);
    pb.environment().putAll(env(true));
    return pb.start();
  }

  @Test
  void theRealCommandTakesPipedStdinAndTurnsCtrlCIntoASignal() throws Exception {
    String id = create();
    Process cat = spawn("exec", id, "--", "cat; echo eof");
    try (var in = cat.getOutputStream()) {
      in.write("piped through a real pipe\n".getBytes(StandardCharsets.UTF_8));
    }
    assertThat(cat.waitFor(60, TimeUnit.SECONDS)).isTrue();
    assertThat(new String(cat.getInputStream().readAllBytes(), StandardCharsets.UTF_8))
        .isEqualTo("piped through a real pipe\neof\n");
    assertThat(cat.exitValue()).isZero();

    Process sleeper = spawn("exec", id, "--no-stdin", "--", "echo ready; sleep 60");
    var out = new java.io.BufferedReader(new java.io.InputStreamReader(sleeper.getInputStream(), StandardCharsets.UTF_8));
    assertThat(out.readLine()).isEqualTo("ready");
    Process kill = new ProcessBuilder("kill", "-INT", String.valueOf(sleeper.pid())).start();
    assertThat(kill.waitFor(10, TimeUnit.SECONDS) && kill.exitValue() == 0).isTrue();
    assertThat(sleeper.waitFor(30, TimeUnit.SECONDS)).as("the command ends after Ctrl-C").isTrue();
    assertThat(sleeper.exitValue()).as(new String(sleeper.getErrorStream().readAllBytes(), StandardCharsets.UTF_8))
        .isGreaterThan(128);
    JsonArray executions = gw.get("/v1/sandboxes/" + id + "/detail", key).json().getJsonArray("executions");
    assertThat(executions.stream().map(e -> ((JsonObject) e).getString("status")))
        .as("the program was stopped on the gateway, not abandoned").contains("cancelled");
  }

  @Test
  void copiesFilesAndDirectoriesBothWays(@TempDir Path tmp) throws Exception {
    String id = create();
    byte[] data = new byte[2 * 1024 * 1024 + 5];
    new Random(3).nextBytes(data);
    Files.write(tmp.resolve("big.bin"), data);
    Run up = run("", "cp", tmp.resolve("big.bin").toString(), id + ":in/big.bin");
    assertThat(up.code()).as(up.err()).isZero();
    assertThat(up.err()).contains("MiB");
    Run down = run("", "cp", id + ":in/big.bin", tmp.resolve("back.bin").toString());
    assertThat(down.code()).as(down.err()).isZero();
    assertThat(Files.readAllBytes(tmp.resolve("back.bin"))).isEqualTo(data);

    Path tree = Files.createDirectories(tmp.resolve("tree/sub"));
    Files.writeString(tree.resolve("a.txt"), "alpha\n");
    Files.writeString(tmp.resolve("tree/run.sh"), "#!/bin/sh\necho ran\n");
    tmp.resolve("tree/run.sh").toFile().setExecutable(true);
    assertThat(run("", "cp", tmp.resolve("tree").toString(), id + ":work").code()).isZero();
    assertThat(run("", "exec", id, "--no-stdin", "--", "cat work/sub/a.txt && work/run.sh").out())
        .isEqualTo("alpha\nran\n");
    Run back = run("", "--json", "cp", id + ":work", tmp.resolve("copy").toString());
    assertThat(back.code()).as(back.err()).isZero();
    assertThat(new JsonObject(back.out()).getString("kind")).isEqualTo("directory");
    assertThat(Files.readString(tmp.resolve("copy/sub/a.txt"))).isEqualTo("alpha\n");
    assertThat(Files.isExecutable(tmp.resolve("copy/run.sh"))).isTrue();
    assertThat(run("", "cp", id + ":work/run.sh", tmp.resolve("one.sh").toString()).code()).isZero();
    assertThat(Files.readString(tmp.resolve("one.sh"))).isEqualTo("#!/bin/sh\necho ran\n");
    assertThat(Files.isExecutable(tmp.resolve("one.sh"))).isTrue();
    assertThat(Files.isExecutable(tmp.resolve("back.bin"))).isFalse();
  }

  @Test
  void errorsPrintTheContractsMessageAndCode() {
    Run missing = run("", "get", "sbx_00000000000000000000000000000000");
    assertThat(missing.code()).isEqualTo(1);
    assertThat(missing.err()).contains("sandbox not found").contains("HTTP 404");
    Run json = run("", "get", "sbx_00000000000000000000000000000000", "--json");
    assertThat(new JsonObject(json.err()).getJsonObject("error").getString("detail")).isEqualTo("sandbox not found");

    assertThat(gw.post("/v1/presets", key, new JsonObject().put("name", "failing")
        .put("setup_commands", new JsonArray().add("exit 5"))).status()).isEqualTo(201);
    Run provider = run("", "create", "--backend", "local", "--preset", "failing");
    assertThat(provider.code()).isEqualTo(1);
    assertThat(provider.err()).contains("code workspace").contains("backend local").contains("HTTP 502");
    Run noBackend = run("", "create");
    assertThat(noBackend.code()).as("no backend and no policy default_backend: the gateway's 422").isEqualTo(1);
    assertThat(noBackend.err()).contains("backend").contains("HTTP 422");
    Run usage = run("", "create", "--cpu", "many");
    assertThat(usage.code()).isEqualTo(2);
    assertThat(usage.err()).contains("--cpu");
  }

  @Test
  void costsPolicyAndKeys() {
    Run costs = run("", "costs", "--by", "backend");
    assertThat(costs.code()).as(costs.err()).isZero();
    assertThat(costs.out()).contains("BACKEND").contains("CUSTOMER_USD").contains("TOTAL");
    assertThat(run("", "costs", "--by", "day", "--json").out()).contains("\"group_by\" : \"day\"");

    Run set = run("", "policy", "set", "--max-concurrent", "9", "--backends", "local");
    assertThat(set.code()).as(set.err()).isZero();
    assertThat(run("", "policy", "set", "--hourly-limit", "3.5").code()).isZero();
    JsonObject policy = new JsonObject(run("", "policy", "get", "--json").out());
    assertThat(policy.getInteger("max_concurrent_sandboxes")).isEqualTo(9);
    assertThat(policy.getValue("hourly_spend_limit_usd").toString()).isEqualTo("3.5");
    assertThat(run("", "policy", "set", "--default-backend", "auto").code()).isZero();
    assertThat(run("", "policy", "set", "--max-concurrent", "8").code()).isZero();
    assertThat(new JsonObject(run("", "policy", "get", "--json").out()).getString("default_backend"))
        .as("a set keeps what it does not name").isEqualTo("auto");
    Run placed = run("", "create", "--isolation", "process", "--json");
    assertThat(placed.code()).as(placed.err()).isZero();
    JsonObject sbx = new JsonObject(placed.out());
    assertThat(sbx.getString("backend")).as("auto, within allowed_backends").isEqualTo("local");
    assertThat(sbx.getJsonObject("placement").getString("chosen")).isEqualTo("local");
    assertThat(run("", "rm", sbx.getString("id")).code()).isZero();
    assertThat(run("", "policy", "set", "--clear").code()).isZero();
    assertThat(run("", "policy", "get").out()).contains("max_concurrent_sandboxes");

    Run made = run("", "keys", "create", "ci", "--scope", "sandboxes:read");
    assertThat(made.code()).as(made.err()).isZero();
    String secret = made.out().strip();
    assertThat(secret).startsWith("bsk_live_");
    JsonArray keys = new JsonArray(run("", "keys", "ls", "--json").out());
    String keyId = keys.stream().map(o -> (JsonObject) o).filter(o -> o.getString("name").equals("ci"))
        .findFirst().orElseThrow().getString("id");
    assertThat(run("", "keys", "ls").out()).contains("ci").contains("sandboxes:read");
    assertThat(run("", "keys", "revoke", keyId).out()).contains("revoked");
  }

  @Test
  void helpEverywhere() {
    for (List<String> cmd : List.of(List.<String>of(), List.of("create"), List.of("ls"), List.of("get"),
        List.of("rm"), List.of("exec"), List.of("cp"), List.of("logs"), List.of("costs"), List.of("policy"),
        List.of("policy", "get"), List.of("policy", "set"), List.of("keys"), List.of("keys", "ls"),
        List.of("keys", "create"), List.of("keys", "revoke"), List.of("login"))) {
      String[] args = java.util.stream.Stream.concat(cmd.stream(), java.util.stream.Stream.of("--help"))
          .toArray(String[]::new);
      Run r = run("", args);
      assertThat(r.code()).as(String.join(" ", args)).isZero();
      assertThat(r.out()).as(String.join(" ", args)).contains("Usage: sandbox");
    }
  }
}
