package ai.bespokelabs.sandbox.benchmarks;

import ai.bespokelabs.sandbox.adapters.bwrap.BwrapWrapper;
import ai.bespokelabs.sandbox.adapters.local.EnvHandOff;
import ai.bespokelabs.sandbox.adapters.local.HostUsers;
import ai.bespokelabs.sandbox.adapters.local.HostWrapper;
import ai.bespokelabs.sandbox.adapters.local.ProcessSpec;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * Sandbox round trip per backend: create → first exec of {@code true} → destroy through the API, against
 * doing the same by hand in this process (make a directory, run the program — through the backend's exact
 * bubblewrap command line for {@code bwrap} — remove the directory; for {@code docker}, {@code podman run
 * --rm} of the same image with the command given by {@code BESPOKE_BENCH_PODMAN}, which {@code bin/benchmark}
 * sets up together with a private engine).
 *
 * <p>The gateway is called over one keep-alive connection by a minimal HTTP client, so the figures are the
 * gateway's and not a general-purpose client's. The floors printed last, measured in the same run, bound
 * what any gateway must add: three API calls, and five state changes made durable before they are answered.
 *
 * <p>Usage: {@code bin/benchmark backends [--iterations N] [--backends local,bwrap,docker]}
 */
public final class BackendBenchmark {
  private BackendBenchmark() {}

  public static void main(String[] args) throws Exception {
    int n = 200;
    List<String> backends = List.of("local", "bwrap", "docker");
    for (int i = 0; i + 1 < args.length; i += 2) {
      switch (args[i]) {
        case "--iterations" -> n = Integer.parseInt(args[i + 1]);
        case "--backends" -> backends = List.of(args[i + 1].split(","));
        default -> throw new IllegalArgumentException("unknown argument " + args[i]);
      }
    }
    Path scratch = Files.createTempDirectory("backend-bench-");
    try (BenchGateway gw = BenchGateway.start(); KeepAliveClient http = new KeepAliveClient(gw.port)) {
      long[] commits = gw.commitLatencies(n);
      long[] trips = roundTrips(gw, http, n);
      System.out.printf("%nCreate -> first exec -> destroy, %d rounds each, microseconds:%n", n);
      System.out.printf("  %-28s %9s %9s %9s %9s%n", "", "p50", "p99", "added p50", "ratio p50");
      String podman = System.getenv("BESPOKE_BENCH_PODMAN");
      String image = System.getenv("BESPOKE_DOCKER_IMAGE");
      for (String backend : backends) {
        boolean docker = backend.equals("docker");
        HostWrapper wrapper = backend.equals("bwrap") ? new BwrapWrapper() : HostWrapper.NONE;
        if (docker && (podman == null || image == null)) {
          System.out.printf("  %-28s no engine (bin/benchmark starts one when podman is installed)%n", backend);
          continue;
        }
        try {
          wrapper.check();
        } catch (RuntimeException notInstalled) {
          System.out.printf("  %-28s not installed on this host%n", backend);
          continue;
        }
        Baseline baseline = docker ? i -> podmanRun(podman, image) : i -> direct(scratch, wrapper, i);
        int rounds = docker ? Math.max(10, n / 10) : n;
        for (int i = 0; i < Math.max(5, rounds / 10); i++) { // warm-up
          baseline.run(i);
          viaApi(gw, http, backend, new long[3]);
        }
        long[] direct = new long[rounds];
        long[] api = new long[rounds];
        long[][] phases = new long[3][rounds];
        long[] one = new long[3];
        for (int i = 0; i < rounds; i++) { // interleaved so both see the same machine
          direct[i] = baseline.run(i);
          api[i] = viaApi(gw, http, backend, one);
          for (int p = 0; p < 3; p++) {
            phases[p][i] = one[p];
          }
        }
        Arrays.sort(direct);
        Arrays.sort(api);
        long d50 = direct[rounds / 2];
        long a50 = api[rounds / 2];
        System.out.printf("  %-28s %9d %9d%n", backend + (docker ? " by hand (podman CLI)" : " by hand (baseline)"), d50, p99(direct));
        System.out.printf("  %-28s %9d %9d %9d %9.2f%n", backend + " through the gateway", a50, p99(api),
            a50 - d50, (double) a50 / d50);
        if (docker) {
          long[] single = new long[rounds];
          for (int i = 0; i < rounds; i++) {
            single[i] = podmanRunRm(podman, image);
          }
          Arrays.sort(single);
          System.out.printf("  %-28s %9d %9d%n", "docker one podman run --rm", single[rounds / 2], p99(single));
        }
        String[] names = {"create", "execute", "destroy"};
        for (int p = 0; p < 3; p++) {
          Arrays.sort(phases[p]);
          System.out.printf("  %-28s %9d %9d%n", "  of which " + names[p], phases[p][rounds / 2], p99(phases[p]));
        }
      }
      System.out.printf("  %-28s %9d %9d%n", "one committed write (DB floor)", commits[n / 2], p99(commits));
      System.out.printf("  %-28s %9d %9d%n", "one HTTP round trip (healthz)", trips[n / 2], p99(trips));
      // what no implementation of this API can avoid: a request per call, and each state change durable
      // before it is answered (create: claim, then running; exec: the stored result, its insert overlapping
      // the program; destroy: stopping, then terminated)
      System.out.printf("  %-28s %9d           (3 round trips + 5 committed writes, at their p50)%n",
          "floor of the gateway's path", 3 * trips[n / 2] + 5 * commits[n / 2]);
    } finally {
      try (Stream<Path> all = Files.walk(scratch)) {
        all.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
      }
    }
    System.exit(0);
  }

  /** One baseline round; returns its microseconds. */
  private interface Baseline {
    long run(int i) throws Exception;
  }

  /**
   * What the docker backend does, by hand with the podman CLI: start a container without network, run
   * {@code true} in it, remove it.
   */
  private static long podmanRun(String podman, String image) throws Exception {
    long t0 = System.nanoTime();
    String id = podman(podman, "run", "-d", "--network", "none", image, "sleep", "600").strip();
    podman(podman, "exec", id, "sh", "-c", "true");
    podman(podman, "rm", "-f", "-t", "0", id);
    return (System.nanoTime() - t0) / 1000;
  }

  /** The whole round as one {@code podman run --rm} of {@code true}: the least a container can cost. */
  private static long podmanRunRm(String podman, String image) throws Exception {
    long t0 = System.nanoTime();
    podman(podman, "run", "--rm", "--network", "none", image, "sh", "-c", "true");
    return (System.nanoTime() - t0) / 1000;
  }

  private static String podman(String podman, String... args) throws Exception {
    List<String> cmd = new java.util.ArrayList<>(Arrays.asList(podman.trim().split("\\s+")));
    cmd.addAll(List.of(args));
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
    if (p.waitFor() != 0) {
      throw new IllegalStateException("podman " + args[0] + " exited " + p.exitValue());
    }
    return out;
  }

  /** {@code GET /healthz} over the benchmark's connection: the floor of every API call. */
  private static long[] roundTrips(BenchGateway gw, KeepAliveClient http, int n) {
    byte[] request = KeepAliveClient.request("GET", "/healthz", null, null);
    long[] out = new long[n];
    for (int i = 0; i < n + 50; i++) {
      long t0 = System.nanoTime();
      call(http, request, 200);
      if (i >= 50) {
        out[i - 50] = (System.nanoTime() - t0) / 1000;
      }
    }
    Arrays.sort(out);
    return out;
  }

  private static long p99(long[] sorted) {
    return sorted[(int) Math.ceil(sorted.length * 0.99) - 1];
  }

  /** Create, exec and destroy through the API; {@code phases} receives each call's microseconds. */
  private static long viaApi(BenchGateway gw, KeepAliveClient http, String backend, long[] phases) {
    byte[] create = KeepAliveClient.request("POST", "/v1/sandboxes", gw.key, new JsonObject().put("backend", backend)
        .put("allow_internet", !backend.equals("docker")).encode());
    long t0 = System.nanoTime();
    String id = new JsonObject(Buffer.buffer(call(http, create, 201))).getString("id");
    long t1 = System.nanoTime();
    JsonObject r = new JsonObject(Buffer.buffer(call(http, KeepAliveClient.request("POST",
        "/v1/sandboxes/" + id + "/execute", gw.key, "{\"command\":\"true\"}"), 200)));
    if (r.getInteger("exit_code") != 0) {
      throw new IllegalStateException(backend + ": true exited " + r.getInteger("exit_code"));
    }
    long t2 = System.nanoTime();
    call(http, KeepAliveClient.request("DELETE", "/v1/sandboxes/" + id, gw.key, null), 200);
    long t3 = System.nanoTime();
    phases[0] = (t1 - t0) / 1000;
    phases[1] = (t2 - t1) / 1000;
    phases[2] = (t3 - t2) / 1000;
    return (t3 - t0) / 1000;
  }

  private static byte[] call(KeepAliveClient http, byte[] request, int expected) {
    int status = http.send(request);
    if (status != expected) {
      throw new IllegalStateException("the gateway answered " + status + ": " + new String(http.body(),
          java.nio.charset.StandardCharsets.UTF_8));
    }
    return http.body();
  }

  private static long direct(Path scratch, HostWrapper wrapper, int i) throws IOException, InterruptedException {
    long t0 = System.nanoTime();
    Path dir = Files.createDirectory(scratch.resolve("s" + System.nanoTime() + "-" + i));
    // the same launch the gateway makes: environment through a file, dropped to an unprivileged uid as root
    HostUsers users = HostUsers.detect();
    Map<String, String> env = wrapper.environment(Map.of("PATH", ProcessSpec.BASE_PATH), dir);
    Path envFile = wrapper.envThroughFile(users.dropping())
        ? EnvHandOff.write(scratch.resolve(".run"), env, HostUsers.PROBE_UID) : null;
    ProcessSpec spec = wrapper.wrap(new ProcessSpec(List.of("/bin/sh", "-c", "true"), dir, env, 60, 1 << 20),
        new HostWrapper.HostSandbox(dir, null, users.dropTo(HostUsers.PROBE_UID), envFile));
    List<String> argv = new java.util.ArrayList<>(spec.argv());
    if (spec.handOff() != null) {
      argv.addAll(0, EnvHandOff.open(spec.handOff()));
    }
    ProcessBuilder pb = new ProcessBuilder(argv).directory(dir.toFile())
        .redirectOutput(ProcessBuilder.Redirect.DISCARD).redirectError(ProcessBuilder.Redirect.DISCARD);
    pb.environment().clear();
    pb.environment().putAll(spec.env());
    int code = pb.start().waitFor();
    if (code != 0) {
      throw new IllegalStateException("direct run exited " + code);
    }
    Files.delete(dir);
    return (System.nanoTime() - t0) / 1000;
  }
}
