package ai.bespokelabs.sandbox.core.net;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.Arrays;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * An IPv4 or IPv6 address range in CIDR notation, held in canonical form: the host bits are cleared and
 * {@link #toString()} prints it as nftables and every other tool reads it ({@code 10.1.0.0/16},
 * {@code fd00::/8}). A bare address is its own range ({@code /32} or {@code /128}).
 *
 * @param address the network address, 4 or 16 bytes
 * @param prefix the prefix length
 */
public record Cidr(byte[] address, int prefix) {
  private static final Pattern V4 = Pattern.compile("[0-9]{1,3}(\\.[0-9]{1,3}){3}");
  private static final Pattern V6 = Pattern.compile("[0-9A-Fa-f:.]+");

  public Cidr {
    if (address.length != 4 && address.length != 16) {
      throw new IllegalArgumentException("an address has 4 or 16 bytes");
    }
    if (prefix < 0 || prefix > address.length * 8) {
      throw new IllegalArgumentException("prefix out of range");
    }
    address = masked(address, prefix);
  }

  /**
   * Parses {@code a.b.c.d[/n]} or an IPv6 literal {@code x:y::z[/n]}; never resolves a name. Empty when
   * {@code text} is not such a range.
   */
  public static Optional<Cidr> parse(String text) {
    String t = text.trim();
    int slash = t.indexOf('/');
    String addr = slash < 0 ? t : t.substring(0, slash);
    boolean v4 = V4.matcher(addr).matches();
    if (!v4 && !(addr.contains(":") && V6.matcher(addr).matches())) {
      return Optional.empty();
    }
    byte[] bytes;
    try {
      bytes = InetAddress.getByName(addr).getAddress(); // a literal: no lookup
    } catch (UnknownHostException e) {
      return Optional.empty();
    }
    if (!v4 && bytes.length == 4) { // an IPv4-mapped IPv6 literal comes back as IPv4: keep it IPv6
      byte[] mapped = new byte[16];
      mapped[10] = (byte) 0xff;
      mapped[11] = (byte) 0xff;
      System.arraycopy(bytes, 0, mapped, 12, 4);
      bytes = mapped;
    }
    int prefix = bytes.length * 8;
    if (slash >= 0) {
      String p = t.substring(slash + 1);
      if (!p.matches("[0-9]{1,3}")) {
        return Optional.empty();
      }
      prefix = Integer.parseInt(p);
      if (prefix > bytes.length * 8) {
        return Optional.empty();
      }
    }
    return Optional.of(new Cidr(bytes, prefix));
  }

  /** The range of exactly one address. */
  public static Cidr of(InetAddress address) {
    byte[] bytes = address.getAddress();
    return new Cidr(bytes, bytes.length * 8);
  }

  public boolean isIpv4() {
    return address.length == 4;
  }

  /** Whether {@code other} lies inside this range. */
  public boolean contains(InetAddress other) {
    byte[] b = other.getAddress();
    return b.length == address.length && Arrays.equals(masked(b, prefix), address);
  }

  private static byte[] masked(byte[] in, int prefix) {
    byte[] out = in.clone();
    for (int i = 0; i < out.length; i++) {
      int keep = Math.max(0, Math.min(8, prefix - i * 8));
      out[i] &= (byte) (0xff << (8 - keep));
    }
    return out;
  }

  @Override
  public byte[] address() {
    return address.clone();
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Cidr c && c.prefix == prefix && Arrays.equals(c.address, address);
  }

  @Override
  public int hashCode() {
    return Arrays.hashCode(address) * 31 + prefix;
  }

  @Override
  public String toString() {
    String host = address.length == 4 ? (address[0] & 0xff) + "." + (address[1] & 0xff) + "." + (address[2] & 0xff)
        + "." + (address[3] & 0xff) : compressed(address); // never InetAddress: it prints ::ffff:a.b.c.d as IPv4
    return host + "/" + prefix;
  }

  /** The shortest IPv6 text: the longest run of two or more zero groups becomes {@code ::}. */
  private static String compressed(byte[] b) {
    int[] g = new int[8];
    for (int i = 0; i < 8; i++) {
      g[i] = ((b[2 * i] & 0xff) << 8) | (b[2 * i + 1] & 0xff);
    }
    int bestStart = -1;
    int bestLen = 1;
    for (int i = 0; i < 8; ) {
      if (g[i] != 0) {
        i++;
        continue;
      }
      int j = i;
      while (j < 8 && g[j] == 0) {
        j++;
      }
      if (j - i > bestLen) {
        bestStart = i;
        bestLen = j - i;
      }
      i = j;
    }
    StringBuilder s = new StringBuilder();
    for (int i = 0; i < 8; i++) {
      if (i == bestStart) {
        s.append(i == 0 ? "::" : ":");
        i += bestLen - 1;
        continue;
      }
      s.append(Integer.toHexString(g[i]));
      if (i < 7) {
        s.append(':');
      }
    }
    return s.toString();
  }
}
