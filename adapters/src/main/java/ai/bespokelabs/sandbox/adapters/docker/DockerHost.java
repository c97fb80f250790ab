package ai.bespokelabs.sandbox.adapters.docker;

import ai.bespokelabs.sandbox.core.error.ApiException;
import io.vertx.core.net.SocketAddress;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Where the Docker Engine API listens, from {@code DOCKER_HOST}: {@code unix:///path/to.sock} or
 * {@code tcp://host:port} (plain HTTP; TLS engines are not supported).
 */
record DockerHost(Path socket, String host, int port) {
  static DockerHost parse(String value) {
    String v = value.trim();
    if (v.startsWith("/")) {
      return new DockerHost(Path.of(v), null, 0);
    }
    URI uri;
    try {
      uri = URI.create(v);
    } catch (IllegalArgumentException e) {
      throw new ApiException(422, "DOCKER_HOST is not a unix:// or tcp:// address");
    }
    if ("unix".equals(uri.getScheme()) && uri.getPath() != null && !uri.getPath().isEmpty()) {
      return new DockerHost(Path.of(uri.getPath()), null, 0);
    }
    if ("tcp".equals(uri.getScheme()) && uri.getHost() != null) {
      return new DockerHost(null, uri.getHost(), uri.getPort() > 0 ? uri.getPort() : 2375);
    }
    throw new ApiException(422, "DOCKER_HOST is not a unix:// or tcp:// address");
  }

  boolean isUnix() {
    return socket != null;
  }

  /** False when a unix socket file does not exist (no engine installed or running here). */
  boolean present() {
    return !isUnix() || Files.exists(socket);
  }

  SocketAddress vertxAddress() {
    return isUnix() ? SocketAddress.domainSocketAddress(socket.toString()) : SocketAddress.inetSocketAddress(port, host);
  }

  /** The Host header value; the engine ignores it on a unix socket. */
  String authority() {
    return isUnix() ? "docker" : host + ":" + port;
  }
}
