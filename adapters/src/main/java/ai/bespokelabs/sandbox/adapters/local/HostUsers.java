package ai.bespokelabs.sandbox.adapters.local;

import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Who the programs of host sandbox run as. A gateway running as an ordinary user runs them as itself (bwrap
 * adds a user namespace). A gateway running as root never runs anything of a tenant's as root: each sandbox
 * gets its own unprivileged host uid, unique among the live sandboxes of this gateway, and its programs drop
 * to it through {@code setpriv} (no capabilities, empty bounding set, {@code no_new_privs}) before the first
 * byte the tenant controls — its environment included — takes effect.
 */
public final class HostUsers {
  /** First host uid given to sandboxes. */
  public static final int UID_BASE = 1_000_000;
  /** How many uids sandboxes may use; also the most sandboxes one root gateway can hold at once. */
  public static final int UID_COUNT = 1 << 16;
  /** The uid health probes run as: outside the sandboxes' range, so it never shares a process limit with one. */
  public static final int PROBE_UID = UID_BASE + UID_COUNT;

  /** Uids held by live sandboxes of every host backend of this process. */
  private static final Set<Integer> TAKEN = ConcurrentHashMap.newKeySet();

  private static final HostUsers DETECTED = new HostUsers(isRoot()
      ? HostWrapper.findExecutable("setpriv", HostWrapper.SYSTEM_BIN, List.of()) : Optional.empty(), isRoot());

  private final Optional<Path> setpriv;
  private final boolean root;

  HostUsers(Optional<Path> setpriv, boolean root) {
    this.setpriv = setpriv;
    this.root = root;
  }

  /** The users of this process: per-sandbox uids when it runs as root. */
  public static HostUsers detect() {
    return DETECTED;
  }

  private static boolean isRoot() {
    try {
      return ((Integer) Files.getAttribute(Path.of("/proc/self"), "unix:uid")) == 0;
    } catch (IOException | UnsupportedOperationException e) {
      return false;
    }
  }

  /** Whether programs drop to a per-sandbox uid (the gateway is root). */
  public boolean dropping() {
    return root;
  }

  /**
   * Fails when the gateway is root but cannot drop privileges: running tenants' programs as root is never
   * the fallback.
   */
  void check(String backend) {
    Optional<String> missing = missing();
    if (missing.isPresent()) {
      throw new ProviderException(ProviderError.unavailable(backend, "create", missing.get()));
    }
  }

  /** What a root gateway lacks to drop privileges, as the sentence an operator acts on; empty when nothing. */
  Optional<String> missing() {
    return root && setpriv.isEmpty()
        ? Optional.of("setpriv is not installed on this host (Debian/Ubuntu: apt-get install util-linux)")
        : Optional.empty();
  }

  /**
   * The command that runs what follows it as {@code uid} with no capabilities, no supplementary groups and
   * {@code no_new_privs}; empty when the gateway is not root.
   */
  public List<String> dropTo(int uid) {
    if (!root) {
      return List.of();
    }
    check("local");
    return List.of(setpriv.get().toString(), "--reuid=" + uid, "--regid=" + uid, "--clear-groups",
        "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--");
  }

  /** A uid no live sandbox of this process holds, now held by the caller until {@link #release}. */
  static int allocate() {
    int start = ThreadLocalRandom.current().nextInt(UID_COUNT);
    for (int i = 0; i < UID_COUNT; i++) {
      int uid = UID_BASE + (start + i) % UID_COUNT;
      if (TAKEN.add(uid)) {
        return uid;
      }
    }
    throw new ProviderException(ProviderError.of(ErrorCode.CREATION_FAILED, "local", "create", true,
        ProviderError.Outcome.FAILED));
  }

  /** Marks {@code uid} held (a sandbox taken back after a restart); false when it is outside the range. */
  static boolean claim(int uid) {
    if (uid < UID_BASE || uid >= UID_BASE + UID_COUNT) {
      return false;
    }
    TAKEN.add(uid);
    return true;
  }

  static void release(int uid) {
    TAKEN.remove(uid);
  }
}
