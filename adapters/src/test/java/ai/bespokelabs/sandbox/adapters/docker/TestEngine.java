package ai.bespokelabs.sandbox.adapters.docker;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A real Docker Engine API for tests: Podman's compatible service on a private unix socket, with its own
 * storage and configuration under a temporary directory, and a small local image built from the host's
 * static busybox (no registry is needed). One per test JVM; stopped, with its containers, at exit.
 */
public final class TestEngine {
  /** The image the tests run: busybox applets only. */
  public static final String IMAGE = "localhost/sandbox-test:1";

  private static TestEngine instance;

  private final Path dir;
  private final Process service;

  private TestEngine(Path dir, Process service) {
    this.dir = dir;
    this.service = service;
  }

  /** The running engine, started on first use. */
  public static synchronized TestEngine get() {
    if (instance == null) {
      instance = start();
      Runtime.getRuntime().addShutdownHook(new Thread(instance::stop));
    }
    return instance;
  }

  /** The value for {@code DOCKER_HOST}. */
  public String dockerHost() {
    return "unix://" + socket();
  }

  public Path socket() {
    return dir.resolve("engine.sock");
  }

  /** Runs the podman CLI against this engine's storage (test setup and inspection only). */
  public String podman(String... args) {
    List<String> cmd = new ArrayList<>(List.of("podman", "--root", dir.resolve("root").toString(), "--runroot",
        dir.resolve("run").toString()));
    cmd.addAll(List.of(args));
    try {
      ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
      pb.environment().put("CONTAINERS_CONF", dir.resolve("containers.conf").toString());
      Process p = pb.start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      if (!p.waitFor(120, TimeUnit.SECONDS) || p.exitValue() != 0) {
        throw new IllegalStateException("podman " + String.join(" ", args) + " failed: " + out);
      }
      return out.strip();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  private static TestEngine start() {
    if (!onPath("podman") || !Files.isExecutable(Path.of("/bin/busybox"))) {
      throw new IllegalStateException("the docker backend tests need podman, runc and a static busybox "
          + "(bin/test installs them: apt-get install podman runc busybox-static)");
    }
    try {
      Path dir = Files.createTempDirectory(Path.of("/tmp"), "engine-");
      // crun and the default ulimits fail in containers without cgroup v2 delegation; runc works everywhere.
      // Networks the tests create live in this engine's directory, so none outlives it.
      Files.writeString(dir.resolve("containers.conf"),
          "[containers]\ndefault_ulimits = []\n[engine]\nruntime = \"runc\"\n[network]\nnetwork_config_dir = \""
              + dir.resolve("networks") + "\"\n");
      ProcessBuilder pb = new ProcessBuilder("podman", "--root", dir.resolve("root").toString(), "--runroot",
          dir.resolve("run").toString(), "system", "service", "--time=0", "unix://" + dir.resolve("engine.sock"))
          .redirectErrorStream(true).redirectOutput(dir.resolve("service.log").toFile());
      pb.environment().put("CONTAINERS_CONF", dir.resolve("containers.conf").toString());
      TestEngine engine = new TestEngine(dir, pb.start());
      engine.awaitPing();
      engine.buildImage();
      return engine;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private void awaitPing() {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (System.nanoTime() < deadline) {
      if (Files.exists(socket())) {
        try (SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX)) {
          ch.connect(UnixDomainSocketAddress.of(socket()));
          ch.write(ByteBuffer.wrap("GET /_ping HTTP/1.0\r\nHost: d\r\n\r\n".getBytes(StandardCharsets.US_ASCII)));
          ByteBuffer buf = ByteBuffer.allocate(256);
          ch.read(buf);
          if (new String(buf.array(), 0, buf.position(), StandardCharsets.US_ASCII).contains(" 200 ")) {
            return;
          }
        } catch (IOException ignored) {
          // not listening yet
        }
      }
      if (!service.isAlive()) {
        break;
      }
      try {
        Thread.sleep(100);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
    }
    throw new IllegalStateException("podman's API service did not start; see " + dir.resolve("service.log"));
  }

  /** Imports a root filesystem of busybox and its applets as {@link #IMAGE}. */
  private void buildImage() throws IOException {
    Path rootfs = dir.resolve("rootfs");
    Path bin = rootfs.resolve("bin");
    Files.createDirectories(bin);
    Files.createDirectories(rootfs.resolve("tmp"));
    Files.copy(Path.of("/bin/busybox"), bin.resolve("busybox"));
    for (String applet : run("/bin/busybox", "--list").split("\\s+")) {
      if (!applet.isBlank() && !applet.equals("busybox")) {
        Files.createSymbolicLink(bin.resolve(applet), Path.of("busybox"));
      }
    }
    Path tar = dir.resolve("rootfs.tar");
    run("tar", "-C", rootfs.toString(), "-cf", tar.toString(), ".");
    podman("import", tar.toString(), IMAGE);
  }

  private static String run(String... cmd) {
    try {
      Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      if (p.waitFor() != 0) {
        throw new IllegalStateException(String.join(" ", cmd) + " failed: " + out);
      }
      return out;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  private static boolean onPath(String name) {
    for (String d : System.getenv().getOrDefault("PATH", "/usr/bin:/bin").split(":")) {
      if (Files.isExecutable(Path.of(d, name))) {
        return true;
      }
    }
    return false;
  }

  private void stop() {
    try {
      podman("rm", "--all", "--force", "--time", "0");
      podman("network", "prune", "--force"); // their bridges go with them
    } catch (RuntimeException ignored) {
      // best effort at exit
    }
    service.destroy();
    try {
      service.waitFor(10, TimeUnit.SECONDS);
      new ProcessBuilder("rm", "-rf", dir.toString()).start().waitFor(30, TimeUnit.SECONDS);
    } catch (IOException | InterruptedException ignored) {
      // a temporary directory left behind is harmless
    }
  }
}
