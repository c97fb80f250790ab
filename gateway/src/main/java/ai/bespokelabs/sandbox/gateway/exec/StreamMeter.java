package ai.bespokelabs.sandbox.gateway.exec;

/** What the execution streams report to the node's metrics: watchers, bytes sent, credits held back. */
public interface StreamMeter {
  StreamMeter NONE = new StreamMeter() {
    @Override
    public void watcher(String transport, int delta) {}

    @Override
    public void streamed(String transport, long bytes) {}

    @Override
    public void creditsHeld(int delta) {}
  };

  /** A watcher opened (+1) or ended (-1) on {@code transport} ({@code sse} or {@code websocket}). */
  void watcher(String transport, int delta);

  /** Output bytes written to a watcher. */
  void streamed(String transport, long bytes);

  /** Event-bus credits a subscriber holds back until its client's socket drains (+n taken, -n returned). */
  void creditsHeld(int delta);
}
