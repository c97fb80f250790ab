package ai.bespokelabs.sandbox.adapters.local;

import ai.bespokelabs.sandbox.core.config.ConfigException;
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

/**
 * Who the programs of host sandbox run as. A gateway running as an ordinary user runs them as itself (bwrap
 * adds a user namespace). A gateway running as root never runs anything of a tenant's as root: each sandbox
 * gets its own unprivileged host uid, unique among the sandboxes of every gateway of this host ({@link HostUids}:
 * one lock file per held uid), and its programs drop to it through {@code setpriv} (no capabilities, empty
 * bounding set, {@code no_new_privs}) before the first byte the tenant controls — its environment included —
 * takes effect.
 */
public final class HostUsers {
  /** First host uid given to sandboxes. */
  public static final int UID_BASE = 1_000_000;
  /** How many uids sandboxes may use; also the most sandboxes one root gateway can hold at once. */
  public static final int UID_COUNT = 1 << 16;
  /** The uid health probes run as: outside the sandboxes' range, so it never shares a process limit with one. */
  public static final int PROBE_UID = UID_BASE + UID_COUNT;

  /** Where the lock files of the uids held on this host are, unless configured otherwise. */
  public static final Path DEFAULT_LOCKS = Path.of("/run/bespoke-sandbox/uids");

  private static final HostUsers DETECTED = new HostUsers(isRoot()
      ? HostWrapper.findExecutable("setpriv", HostWrapper.SYSTEM_BIN, List.of()) : Optional.empty(), isRoot());

  private final Optional<Path> setpriv;
  private final boolean root;
  private final HostUids uids;

  HostUsers(Optional<Path> setpriv, boolean root) {
    this(setpriv, root, new HostUids(DEFAULT_LOCKS, UID_BASE, UID_COUNT));
  }

  private HostUsers(Optional<Path> setpriv, boolean root, HostUids uids) {
    this.setpriv = setpriv;
    this.root = root;
    this.uids = uids;
  }

  /** The users of this process: per-sandbox uids when it runs as root. */
  public static HostUsers detect() {
    return DETECTED;
  }

  /**
   * These users with sandbox uids drawn from {@code count} uids from {@code first} (a part of the block
   * {@link #UID_BASE} .. {@link #UID_BASE} + {@link #UID_COUNT} - 1, which the loopback rule covers), held
   * through lock files in {@code locks}.
   *
   * @throws ConfigException naming {@code BESPOKE_SANDBOX_UIDS} when the range leaves the block
   */
  public HostUsers withUids(int first, int count, Path locks) {
    if (count < 1 || first < UID_BASE || (long) first + count > UID_BASE + UID_COUNT) {
      throw new ConfigException("BESPOKE_SANDBOX_UIDS must be a range first-last within " + UID_BASE + "-"
          + (UID_BASE + UID_COUNT - 1));
    }
    if (!locks.isAbsolute()) {
      throw new ConfigException("BESPOKE_SANDBOX_UID_LOCKS must be an absolute directory");
    }
    return new HostUsers(setpriv, root, new HostUids(locks, first, count));
  }

  /** The uids one host backend holds, for as long as it lives. */
  Held held(String backend) {
    return new Held(uids, backend);
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

  /**
   * The host uids one backend of this gateway holds ({@link HostUids}), so that it gives back only its own and,
   * when it closes, lets go of those its sandboxes still have (they stay reserved for their directories).
   * Every call may wait on the host-wide lock file: never on an event loop, except {@link #close}, which only
   * closes files.
   */
  static final class Held {
    private final HostUids uids;
    private final String backend;
    private final Set<Integer> mine = ConcurrentHashMap.newKeySet();

    private Held(HostUids uids, String backend) {
      this.uids = uids;
      this.backend = backend;
    }

    /** A uid no sandbox of this host holds and no process runs as; {@code owner}: the directory it will own. */
    int allocate(Path owner) {
      int uid = uids.allocate(backend, owner);
      mine.add(uid);
      return uid;
    }

    /** Takes back the uid of a directory found after a restart; false when out of range or held elsewhere. */
    boolean claim(int uid, Path owner) {
      if (mine.contains(uid) || uids.claim(backend, uid, owner)) {
        mine.add(uid);
        return true;
      }
      return false;
    }

    /** Gives {@code uid} back to the host when this backend holds it. */
    void release(int uid) {
      if (mine.remove(uid)) {
        uids.release(uid);
      }
    }

    /** Lets go of every uid still held: each stays reserved for its directory until that is gone. */
    void close() {
      for (Integer uid : List.copyOf(mine)) {
        mine.remove(uid);
        uids.letGo(uid);
      }
    }
  }
}
