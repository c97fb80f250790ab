package ai.bespokelabs.sandbox.gateway.http;

/**
 * A group of endpoints. Each HTTP verticle registers its own instances: some keep state confined to their
 * verticle's event loop (open streams, WebSocket sessions).
 */
@FunctionalInterface
public interface Endpoints {
  void register(Api api);
}
