package ai.bespokelabs.sandbox.adapters.runpod;

import ai.bespokelabs.sandbox.adapters.http.ProviderHttp;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.http.PoolOptions;
import io.vertx.core.http.RequestOptions;

/**
 * The HTTP side of the RunPod adapter: one Vert.x HTTP client for REST v1, the Bearer key, and the mapping of
 * every failure onto the error contract. Nothing here blocks: every request is issued on the client's context
 * (the adapter's). Response bodies of failed calls are never read into errors or logs: they may echo credentials.
 */
final class RunPodClient extends ProviderHttp {
  private final RunPodSettings settings;

  RunPodClient(Vertx vertx, RunPodSettings settings) {
    super(vertx, RunPodProvider.BACKEND, vertx.createHttpClient(new HttpClientOptions()
        .setConnectTimeout((int) Math.min(10_000, settings.requestTimeout().toMillis())).setKeepAlive(true)
        .setKeepAliveTimeout(30), new PoolOptions().setHttp1MaxSize(16)), settings.requestTimeout());
    this.settings = settings;
  }

  RunPodSettings settings() {
    return settings;
  }

  @Override
  protected RequestOptions authorize(RequestOptions o) {
    return o.putHeader(HttpHeaders.AUTHORIZATION, "Bearer " + settings.apiKey().reveal());
  }

  /** A REST v1 URL. */
  String api(String path) {
    return settings.apiUrl() + path;
  }
}
