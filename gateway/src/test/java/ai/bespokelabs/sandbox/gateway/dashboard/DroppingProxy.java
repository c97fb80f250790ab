package ai.bespokelabs.sandbox.gateway.dashboard;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/** A TCP relay to the gateway whose open connections the test can cut at once, as a network drop would. */
final class DroppingProxy implements AutoCloseable {
  private final ServerSocket server;
  private final int target;
  private final List<Socket> open = new CopyOnWriteArrayList<>();

  DroppingProxy(int target) throws IOException {
    this.target = target;
    this.server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    Thread.ofVirtual().start(this::accept);
  }

  int port() {
    return server.getLocalPort();
  }

  /** Cuts every connection now open; new ones are relayed as before. */
  void drop() {
    for (Socket s : open) {
      try {
        s.close();
      } catch (IOException ignored) {
        // already closed
      }
    }
    open.clear();
  }

  private void accept() {
    while (!server.isClosed()) {
      try {
        Socket client = server.accept();
        Socket upstream = new Socket(InetAddress.getLoopbackAddress(), target);
        open.add(client);
        open.add(upstream);
        Thread.ofVirtual().start(() -> pump(client, upstream));
        Thread.ofVirtual().start(() -> pump(upstream, client));
      } catch (IOException e) {
        // closed, or the gateway refused: the client sees its connection end
      }
    }
  }

  private static void pump(Socket from, Socket to) {
    try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
      byte[] buf = new byte[8192];
      int n;
      while ((n = in.read(buf)) >= 0) {
        out.write(buf, 0, n);
        out.flush();
      }
    } catch (IOException ignored) {
      // cut
    } finally {
      try {
        from.close();
        to.close();
      } catch (IOException ignored) {
        // already closed
      }
    }
  }

  @Override
  public void close() throws IOException {
    server.close();
    drop();
  }
}
