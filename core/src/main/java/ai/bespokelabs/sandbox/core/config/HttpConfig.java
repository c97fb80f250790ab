package ai.bespokelabs.sandbox.core.config;

/**
 * The HTTP server ({@code http} in {@code conf/gateway.json}).
 *
 * @param host listen address ({@code HOST})
 * @param port listen port ({@code PORT}; 0: any free port)
 * @param instances HTTP verticle instances ({@code BESPOKE_HTTP_INSTANCES}; default one per core)
 * @param maxRequestBodyBytes larger bodies get 413 ({@code BESPOKE_MAX_REQUEST_BODY_BYTES})
 * @param maxUploadBytes largest file upload ({@code BESPOKE_MAX_UPLOAD_BYTES})
 */
public record HttpConfig(String host, int port, int instances, int maxRequestBodyBytes, long maxUploadBytes) {
  public HttpConfig withPort(int newPort) {
    return new HttpConfig(host, newPort, instances, maxRequestBodyBytes, maxUploadBytes);
  }
}
