package ai.bespokelabs.sandbox.core.bus;

/**
 * The wire of the runtime protocol: addresses, the header naming each adapter operation, and the operations'
 * names. Only its two ends know it: {@link BusRuntimeClient} and {@link AdapterEndpoint}.
 */
public final class Addresses {
  /** Message header naming the adapter operation. */
  public static final String ACTION = "action";
  /** How long a destroy may take, whoever asks for it. */
  public static final long DESTROY_TIMEOUT_MS = RuntimeClient.DESTROY_TIMEOUT_MS;
  /** Header naming the organization a file operation is for (the adapters share their file pool by it). */
  public static final String ORGANIZATION = "organization";
  /** Header naming the provider resource an adopt attaches to. */
  public static final String RESOURCE = "resource";
  public static final String CREATE = "create";
  public static final String EXEC = "exec";
  public static final String DESTROY = "destroy";
  public static final String HEALTH = "health";
  public static final String START = "start";
  public static final String ATTACH = "attach";
  public static final String DETACH = "detach";
  public static final String STDIN = "stdin";
  public static final String SIGNAL = "signal";
  public static final String LIST = "list";
  public static final String SNAPSHOT = "snapshot";
  public static final String ADOPT = "adopt";
  public static final String FILES = "files";
  public static final String SET_TIMEOUT = "set_timeout";
  public static final String METRICS = "metrics";
  /** The backend's public setup facts ({@code Inventory.details}), a JSON object. */
  public static final String DETAILS = "details";

  private static final String SUBSCRIBER = "sandbox.subscriber.";
  private static final String TEXT_SUBSCRIBER = SUBSCRIBER + "text.";

  private Addresses() {}

  /**
   * A new address for one client's subscription to an execution. {@code textOutput}: the client receives
   * output as JSON text (SSE, WebSocket text mode), so the adapter encodes each output event once, on the
   * thread that read it, for every such client.
   */
  public static String subscriber(boolean textOutput, String id) {
    return (textOutput ? TEXT_SUBSCRIBER : SUBSCRIBER) + id;
  }

  /** Whether the subscriber at {@code address} receives output as JSON text. */
  public static boolean wantsTextOutput(String address) {
    return address.startsWith(TEXT_SUBSCRIBER);
  }

  /** Where a node stores the results of the asynchronous executions it started. */
  public static String recorder(String nodeId) {
    return "sandbox.exec.recorder." + nodeId;
  }

  /** Node-independent operations of a backend (create of remote sandboxes, health, listing). */
  public static String adapter(String backend) {
    return "sandbox.adapter." + backend;
  }

  /** Operations on sandboxes hosted by one node (local processes, containers on that node). */
  public static String adapter(String backend, String nodeId) {
    return "sandbox.adapter." + backend + "." + nodeId;
  }
}
