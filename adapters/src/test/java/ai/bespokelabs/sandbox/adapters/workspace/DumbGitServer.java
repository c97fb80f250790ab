package ai.bespokelabs.sandbox.adapters.workspace;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A repository ({@code project.git}, branch {@code main}, one commit with a {@code README}) served over git's
 * dumb HTTP protocol on loopback, counting the requests it gets: what a test points a {@code git_repo} at.
 */
public final class DumbGitServer implements AutoCloseable {
  private final HttpServer server;
  private final AtomicInteger requests = new AtomicInteger();

  /** Builds the repository under {@code tmp} and starts serving it. */
  public DumbGitServer(Path tmp) throws IOException, InterruptedException {
    Path served = tmp.resolve("served");
    Path bare = served.resolve("project.git");
    Path work = tmp.resolve("work");
    git(tmp, "init", "--quiet", "--bare", "-b", "main", bare.toString());
    git(tmp, "init", "--quiet", "-b", "main", work.toString());
    Files.writeString(work.resolve("README"), "internal\n");
    git(work, "add", "-A");
    git(work, "commit", "--quiet", "-m", "one");
    git(work, "push", "--quiet", bare.toString(), "main");
    git(bare, "update-server-info");
    server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    server.createContext("/", exchange -> {
      requests.incrementAndGet();
      Path file = served.resolve(exchange.getRequestURI().getPath().substring(1)).normalize();
      if (file.startsWith(served) && Files.isRegularFile(file)) {
        byte[] body = Files.readAllBytes(file);
        exchange.sendResponseHeaders(200, body.length);
        exchange.getResponseBody().write(body);
      } else {
        exchange.sendResponseHeaders(404, -1);
      }
      exchange.close();
    });
    server.start();
  }

  public int port() {
    return server.getAddress().getPort();
  }

  /** How many requests it has answered. */
  public int requests() {
    return requests.get();
  }

  @Override
  public void close() {
    server.stop(0);
  }

  /** Runs git in {@code cwd} with a fixed identity; fails with its output when it fails. */
  public static void git(Path cwd, String... args) throws IOException, InterruptedException {
    List<String> cmd = new ArrayList<>(List.of("git", "-c", "user.name=t", "-c", "user.email=t@example.com"));
    cmd.addAll(List.of(args));
    Process p = new ProcessBuilder(cmd).directory(cwd.toFile()).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (p.waitFor() != 0) {
      throw new IllegalStateException("git " + String.join(" ", args) + ": " + out);
    }
  }
}
