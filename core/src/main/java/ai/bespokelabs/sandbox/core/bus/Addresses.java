package ai.bespokelabs.sandbox.core.bus;

/** Event-bus addresses shared by every module. */
public final class Addresses {
  /** Message header naming the adapter operation. */
  public static final String ACTION = "action";
  public static final String CREATE = "create";
  public static final String EXEC = "exec";
  public static final String DESTROY = "destroy";
  public static final String HEALTH = "health";

  /** Published (wake-up only) after a transaction that wrote lifecycle events commits. */
  public static final String LIFECYCLE_WAKEUP = "sandbox.lifecycle";

  private Addresses() {}

  /** Node-independent operations of a backend (create of remote sandboxes, health, listing). */
  public static String adapter(String backend) {
    return "sandbox.adapter." + backend;
  }

  /** Operations on sandboxes hosted by one node (local processes, containers on that node). */
  public static String adapter(String backend, String nodeId) {
    return "sandbox.adapter." + backend + "." + nodeId;
  }
}
