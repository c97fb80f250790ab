package ai.bespokelabs.sandbox.adapters.workspace;

import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.UnknownHostException;
import java.util.List;
import java.util.Locale;
import java.util.regex.Pattern;

/**
 * Which {@code git_repo} URLs the gateway clones: {@code https} or {@code http} ({@code file} only when the
 * operator allows it), without credentials (they would be stored and shown to every reader of the sandbox),
 * naming a host whose every address is public, unless the operator allows private destinations: loopback,
 * private, link-local (cloud metadata), unique-local, carrier-grade NAT, multicast, unspecified and reserved
 * addresses would let a tenant make the gateway fetch from services only it can reach. Messages never repeat
 * the URL.
 */
public final class GitUrls {
  /** Characters of RFC 3986 URLs; anything else (spaces, backslashes, controls) parses differently in git. */
  private static final Pattern URL_CHARS = Pattern.compile("[A-Za-z0-9._~:/?\\[\\]@!$&'()*+,;=%-]+");
  private static final String LABEL = "[A-Za-z0-9][A-Za-z0-9-]{0,62}";
  private static final Pattern HOST_NAME = Pattern.compile(LABEL + "(\\." + LABEL + ")*\\.?");
  private static final String OCTET = "(25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)";
  private static final Pattern DOTTED_QUAD = Pattern.compile(OCTET + "(\\." + OCTET + "){3}");

  private GitUrls() {}

  /** Looks a host name up (all its addresses); replaceable in tests. */
  @FunctionalInterface
  public interface Resolver {
    InetAddress[] resolve(String host) throws UnknownHostException;
  }

  /** A refused URL, with a message safe to show the caller. */
  public static final class Refused extends Exception {
    private final boolean destination;

    public Refused(String message) {
      this(message, false);
    }

    Refused(String message, boolean destination) {
      super(message, null, false, false);
      this.destination = destination;
    }

    /** Whether the URL is well-formed but its host is not a destination allowed to this gateway. */
    public boolean destination() {
      return destination;
    }
  }

  /**
   * Checks what can be checked without looking the host up: scheme, no credentials, a well-formed host, and a
   * host given as an address or {@code localhost} being public unless {@code allowPrivate}.
   *
   * @param field the request field named in messages ({@code git_repo} or {@code repo})
   * @return the parsed URL
   */
  public static URI check(String field, String repo, boolean allowFileUrls, boolean allowPrivate) throws Refused {
    String schemes = allowFileUrls ? "an https, http or file" : "an https or http";
    URI uri;
    try {
      if (repo == null || repo.startsWith("-") || !URL_CHARS.matcher(repo).matches()) {
        throw new URISyntaxException("", "");
      }
      uri = new URI(repo);
    } catch (URISyntaxException e) {
      throw new Refused(field + " must be " + schemes + " URL");
    }
    String scheme = uri.getScheme() == null ? "" : uri.getScheme().toLowerCase(Locale.ROOT);
    if (!List.of("https", "http").contains(scheme) && !(allowFileUrls && scheme.equals("file"))) {
      throw new Refused(field + " must be " + schemes + " URL");
    }
    String authority = uri.getRawAuthority();
    if (uri.getRawUserInfo() != null || authority != null && authority.contains("@")) {
      throw new Refused(field + " must not carry credentials (user:password@ or a token); use a URL without "
          + "them, for a repository the gateway can read without credentials");
    }
    if (uri.getRawFragment() != null) {
      throw new Refused(field + " must not have a #fragment");
    }
    if (scheme.equals("file")) {
      return uri;
    }
    String host = uri.getHost();
    if (host == null || host.isEmpty()) {
      throw new Refused(field + " must name a host");
    }
    InetAddress literal = literal(field, host);
    if (!allowPrivate) {
      String name = host.toLowerCase(Locale.ROOT).replaceAll("\\.$", "");
      if (literal != null && !isPublic(literal) || name.equals("localhost") || name.endsWith(".localhost")) {
        throw privateDestination(field);
      }
    }
    return uri;
  }

  /**
   * The addresses git may connect to for {@code uri}'s host: all of them, each public unless
   * {@code allowPrivate}. Blocking (a DNS lookup).
   */
  public static InetAddress[] destinations(String field, URI uri, boolean allowPrivate, Resolver resolver)
      throws Refused {
    InetAddress[] all;
    try {
      InetAddress literal = literal(field, uri.getHost());
      all = literal != null ? new InetAddress[] {literal} : resolver.resolve(uri.getHost());
    } catch (UnknownHostException e) {
      throw new Refused(field + "'s host was not found");
    }
    if (all.length == 0) {
      throw new Refused(field + "'s host was not found");
    }
    for (InetAddress a : all) {
      if (!allowPrivate && !isPublic(a)) {
        throw privateDestination(field);
      }
    }
    return all;
  }

  /** The host as an address when it is written as one (only canonical forms are accepted), else null. */
  static InetAddress literal(String field, String host) throws Refused {
    try {
      if (host.startsWith("[") && host.endsWith("]")) {
        String v6 = host.substring(1, host.length() - 1);
        if (!v6.matches("[0-9A-Fa-f:.]+")) {
          throw new Refused(field + " must name its host by name or by address");
        }
        return InetAddress.getByName(v6);
      }
      if (DOTTED_QUAD.matcher(host).matches()) {
        return InetAddress.getByName(host);
      }
    } catch (UnknownHostException e) {
      throw new Refused(field + " must name its host by name or by address");
    }
    String last = host.replaceAll("\\.$", "");
    last = last.substring(last.lastIndexOf('.') + 1).toLowerCase(Locale.ROOT);
    // 2130706433, 0x7f.1, 127.1 and the like are addresses to git but not names: refuse them
    if (!HOST_NAME.matcher(host).matches() || last.matches("[0-9]+|0x[0-9a-f]*")) {
      throw new Refused(field + " must name its host by name or by address");
    }
    return null;
  }

  private static Refused privateDestination(String field) {
    return new Refused(field + " must be a public host: loopback, private, link-local and other non-public "
        + "destinations are refused unless the operator sets BESPOKE_GIT_ALLOW_PRIVATE", true);
  }

  /** Whether {@code uri}'s host is written as an address (nothing to look up or pin). */
  public static boolean hostIsAddress(URI uri) {
    String host = uri.getHost();
    return host != null && (host.startsWith("[") || DOTTED_QUAD.matcher(host).matches());
  }

  /** Whether {@code a} is a public unicast address. */
  public static boolean isPublic(InetAddress a) {
    if (a.isAnyLocalAddress() || a.isLoopbackAddress() || a.isLinkLocalAddress() || a.isSiteLocalAddress()
        || a.isMulticastAddress()) {
      return false;
    }
    byte[] b = a.getAddress();
    if (a instanceof Inet4Address) {
      return publicV4(b, 0);
    }
    int b0 = b[0] & 0xff;
    int b1 = b[1] & 0xff;
    if ((b0 & 0xfe) == 0xfc) {
      return false; // fc00::/7 unique local
    }
    boolean zeros = true;
    for (int i = 0; i < 10; i++) {
      zeros &= b[i] == 0;
    }
    if (zeros && (b[10] == 0 && b[11] == 0 || (b[10] & 0xff) == 0xff && (b[11] & 0xff) == 0xff)) {
      return publicV4(b, 12); // IPv4-compatible and IPv4-mapped
    }
    if (b0 == 0x00 && b1 == 0x64 && (b[2] & 0xff) == 0xff && (b[3] & 0xff) == 0x9b) {
      return publicV4(b, 12); // NAT64 64:ff9b::/96
    }
    if (b0 == 0x20 && b1 == 0x02) {
      return publicV4(b, 2); // 6to4 2002::/16
    }
    if (b0 == 0x20 && b1 == 0x01 && (b[2] == 0 && b[3] == 0 || (b[2] & 0xff) == 0x0d && (b[3] & 0xff) == 0xb8)) {
      return false; // Teredo 2001::/32 (hides its IPv4 address), documentation 2001:db8::/32
    }
    return b0 != 0x01 || b1 != 0x00; // 100::/64 discard
  }

  private static boolean publicV4(byte[] b, int at) {
    int x = b[at] & 0xff;
    int y = b[at + 1] & 0xff;
    int z = b[at + 2] & 0xff;
    return !(x == 0 || x == 10 || x == 127 || x >= 224
        || x == 100 && (y & 0xc0) == 64 // 100.64.0.0/10 carrier-grade NAT
        || x == 169 && y == 254 // link-local, cloud metadata
        || x == 172 && (y & 0xf0) == 16
        || x == 192 && y == 168
        || x == 192 && y == 0 && (z == 0 || z == 2) // IETF protocol assignments, TEST-NET-1
        || x == 198 && (y & 0xfe) == 18 // benchmarking
        || x == 198 && y == 51 && z == 100
        || x == 203 && y == 0 && z == 113);
  }
}
