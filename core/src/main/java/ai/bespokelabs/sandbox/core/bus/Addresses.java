package ai.bespokelabs.sandbox.core.bus;

/**
 * The wire of the runtime protocol: addresses, the header naming each adapter operation, and the operations'
 * names. Only its two ends know it: {@link BusRuntimeClient} and {@link AdapterEndpoint}.
 */
final class Addresses {
  /** Message header naming the adapter operation. */
  static final String ACTION = "action";
  /** Header naming the organization a file operation is for (the adapters share their file pool by it). */
  static final String ORGANIZATION = "organization";
  /** Header naming the provider resource an adopt attaches to. */
  static final String RESOURCE = "resource";
  static final String CREATE = "create";
  static final String EXEC = "exec";
  static final String DESTROY = "destroy";
  static final String HEALTH = "health";
  static final String START = "start";
  static final String ATTACH = "attach";
  static final String DETACH = "detach";
  static final String STDIN = "stdin";
  static final String SIGNAL = "signal";
  static final String LIST = "list";
  static final String SNAPSHOT = "snapshot";
  static final String ADOPT = "adopt";
  static final String FILES = "files";
  static final String SET_TIMEOUT = "set_timeout";
  static final String METRICS = "metrics";
  /** The backend's public setup facts ({@code Inventory.details}), a JSON object. */
  static final String DETAILS = "details";

  private static final String SUBSCRIBER = "sandbox.subscriber.";
  private static final String TEXT_SUBSCRIBER = SUBSCRIBER + "text.";

  private Addresses() {}

  /**
   * A new address for one client's subscription to an execution. {@code textOutput}: the client receives
   * output as JSON text (SSE, WebSocket text mode), so the adapter encodes each output event once, on the
   * thread that read it, for every such client.
   */
  static String subscriber(boolean textOutput, String id) {
    return (textOutput ? TEXT_SUBSCRIBER : SUBSCRIBER) + id;
  }

  /** Whether the subscriber at {@code address} receives output as JSON text. */
  static boolean wantsTextOutput(String address) {
    return address.startsWith(TEXT_SUBSCRIBER);
  }

  /** Where a node stores the results of the asynchronous executions it started. */
  static String recorder(String nodeId) {
    return "sandbox.exec.recorder." + nodeId;
  }

  /** Node-independent operations of a backend (create of remote sandboxes, health, listing). */
  static String adapter(String backend) {
    return "sandbox.adapter." + backend;
  }

  /** Operations on sandboxes hosted by one node (local processes, containers on that node). */
  static String adapter(String backend, String nodeId) {
    return "sandbox.adapter." + backend + "." + nodeId;
  }
}
