package ai.bespokelabs.sandbox.core.config;

import java.util.List;
import java.util.Optional;

/**
 * The HTTP server ({@code http} in {@code conf/gateway.json}).
 *
 * @param host listen address ({@code HOST})
 * @param port listen port ({@code PORT}; 0: any free port)
 * @param instances HTTP verticle instances ({@code BESPOKE_HTTP_INSTANCES}; default one per core)
 * @param maxRequestBodyBytes larger bodies get 413 ({@code BESPOKE_MAX_REQUEST_BODY_BYTES})
 * @param maxUploadBytes largest file upload ({@code BESPOKE_MAX_UPLOAD_BYTES})
 * @param idleTimeoutSecs a connection with no request in progress for this long is closed
 *     ({@code BESPOKE_HTTP_IDLE_TIMEOUT_SECS})
 * @param maxConnectionsPerClient open connections one client address may hold, 0: no limit
 *     ({@code BESPOKE_HTTP_MAX_CONNECTIONS_PER_CLIENT})
 * @param trustedProxies addresses whose {@code X-Forwarded-For} names the client ({@code BESPOKE_TRUSTED_PROXIES})
 * @param publicUrl the URL clients reach this gateway at, without a trailing slash ({@code BESPOKE_PUBLIC_URL})
 */
public record HttpConfig(String host, int port, int instances, int maxRequestBodyBytes, long maxUploadBytes,
    int idleTimeoutSecs, int maxConnectionsPerClient, List<AddressRange> trustedProxies, Optional<String> publicUrl) {
  public HttpConfig {
    trustedProxies = List.copyOf(trustedProxies);
  }

  public HttpConfig withPort(int newPort) {
    return new HttpConfig(host, newPort, instances, maxRequestBodyBytes, maxUploadBytes, idleTimeoutSecs,
        maxConnectionsPerClient, trustedProxies, publicUrl);
  }
}
