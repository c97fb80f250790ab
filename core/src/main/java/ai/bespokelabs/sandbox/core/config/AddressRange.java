package ai.bespokelabs.sandbox.core.config;

import io.netty.util.NetUtil;
import java.net.InetAddress;
import java.util.Arrays;

/**
 * An IP address or a CIDR range of them ({@code 10.0.0.0/8}, {@code 192.0.2.7}, {@code fd00::/8}). Parsed from
 * literals only, never through name resolution, so matching an address never blocks.
 *
 * @param network the range's first address, 4 bytes (IPv4) or 16 (IPv6)
 * @param bits how many leading bits of an address must equal the network's
 */
public record AddressRange(byte[] network, int bits) {
  public AddressRange {
    network = network.clone();
  }

  @Override
  public byte[] network() {
    return network.clone();
  }

  /** The range written as an address or {@code address/bits}; throws {@link IllegalArgumentException}. */
  public static AddressRange parse(String text) {
    String s = text.trim();
    int slash = s.indexOf('/');
    byte[] address = literal(slash < 0 ? s : s.substring(0, slash));
    if (address == null) {
      throw new IllegalArgumentException("not an IP address: " + s);
    }
    int max = address.length * 8;
    int bits = max;
    if (slash >= 0) {
      String b = s.substring(slash + 1);
      if (b.isEmpty() || b.length() > 3 || !b.chars().allMatch(Character::isDigit) || Integer.parseInt(b) > max) {
        throw new IllegalArgumentException("not a prefix length between 0 and " + max + ": " + s);
      }
      bits = Integer.parseInt(b);
    }
    for (int i = 0; i < address.length; i++) {
      int keep = Math.max(0, Math.min(8, bits - i * 8));
      address[i] &= (byte) (0xff << (8 - keep));
    }
    return new AddressRange(address, bits);
  }

  /** The bytes of an IP literal (IPv4-mapped IPv6 as IPv4), or null when {@code text} is not one. */
  public static byte[] literal(String text) {
    String s = text.trim();
    if (s.startsWith("[") && s.endsWith("]")) {
      s = s.substring(1, s.length() - 1);
    }
    byte[] b = NetUtil.createByteArrayFromIpAddressString(s);
    if (b != null && b.length == 16 && isMappedIpv4(b)) {
      return Arrays.copyOfRange(b, 12, 16);
    }
    return b;
  }

  public boolean contains(InetAddress address) {
    return contains(address.getAddress());
  }

  /** Whether the address (4 or 16 bytes) lies in this range. */
  public boolean contains(byte[] address) {
    if (address == null) {
      return false;
    }
    if (address.length == 16 && isMappedIpv4(address)) {
      address = Arrays.copyOfRange(address, 12, 16);
    }
    if (address.length != network.length) {
      return false;
    }
    for (int i = 0; i < address.length; i++) {
      int keep = Math.max(0, Math.min(8, bits - i * 8));
      int mask = (0xff << (8 - keep)) & 0xff;
      if ((address[i] & mask) != (network[i] & mask)) {
        return false;
      }
    }
    return true;
  }

  private static boolean isMappedIpv4(byte[] b) {
    for (int i = 0; i < 10; i++) {
      if (b[i] != 0) {
        return false;
      }
    }
    return b[10] == (byte) 0xff && b[11] == (byte) 0xff;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof AddressRange r && bits == r.bits && Arrays.equals(network, r.network);
  }

  @Override
  public int hashCode() {
    return 31 * Arrays.hashCode(network) + bits;
  }

  @Override
  public String toString() {
    try {
      return InetAddress.getByAddress(network).getHostAddress() + "/" + bits;
    } catch (java.net.UnknownHostException e) {
      throw new IllegalStateException(e);
    }
  }
}
