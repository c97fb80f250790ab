package ai.bespokelabs.sandbox.adapters.spi;

import ai.bespokelabs.sandbox.core.Hmac;
import ai.bespokelabs.sandbox.core.Secret;
import ai.bespokelabs.sandbox.core.error.ApiException;
import java.util.regex.Pattern;

/**
 * Snapshot ids bound to the organization that took them, for providers whose snapshots carry no label we could
 * check: the id handed out is {@code <organization id>.<mac>.<provider snapshot id>}, the MAC keyed by the
 * provider credential. Another organization's id, a provider id a tenant learned some other way, or a
 * malformed one is 404 {@code snapshot not found}, exactly like an id that never existed.
 */
public final class SnapshotIds {
  private static final int MAC_CHARS = 32;
  private final String backend;
  private final Pattern providerId;
  private final Hmac mac;

  /**
   * @param backend names the MAC's domain, so one provider's ids mean nothing to another's
   * @param providerId what a provider snapshot id looks like
   * @param key the provider credential keying the MAC
   */
  public SnapshotIds(String backend, Pattern providerId, Secret key) {
    this.backend = backend;
    this.providerId = providerId;
    this.mac = new Hmac(key);
  }

  /** The id {@code organizationId} gets for the provider's snapshot {@code providerSnapshotId}. */
  public String handOut(String organizationId, String providerSnapshotId) {
    return organizationId + "." + mac(organizationId, providerSnapshotId) + "." + providerSnapshotId;
  }

  /** The provider's snapshot id behind {@code snapshotId}, when {@code organizationId} was handed it. */
  public String resolve(String snapshotId, String organizationId) {
    String prefix = organizationId + ".";
    int macEnd = prefix.length() + MAC_CHARS;
    if (!snapshotId.startsWith(prefix) || snapshotId.length() <= macEnd + 1 || snapshotId.charAt(macEnd) != '.') {
      throw notFound();
    }
    String raw = snapshotId.substring(macEnd + 1);
    if (!providerId.matcher(raw).matches()
        || !Hmac.constantTimeEquals(snapshotId.substring(prefix.length(), macEnd), mac(organizationId, raw))) {
      throw notFound();
    }
    return raw;
  }

  private static ApiException notFound() {
    return new ApiException(404, "snapshot not found");
  }

  private String mac(String organizationId, String providerSnapshotId) {
    return mac.hex(backend + "-snapshot\n" + organizationId + "\n" + providerSnapshotId).substring(0, MAC_CHARS);
  }
}
