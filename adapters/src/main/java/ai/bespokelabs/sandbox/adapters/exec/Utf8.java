package ai.bespokelabs.sandbox.adapters.exec;

/** UTF-8 boundary helpers for cutting a byte stream into chunks that decode on their own. */
public final class Utf8 {
  private Utf8() {}

  /**
   * The length of the longest prefix of {@code b[0, len)} that does not end inside a multi-byte character:
   * {@code len} itself unless the last one to three bytes start an incomplete sequence. Invalid bytes are
   * never held back.
   */
  public static int completePrefix(byte[] b, int len) {
    for (int back = 1; back <= 3 && back <= len; back++) {
      int c = b[len - back] & 0xff;
      if ((c & 0xc0) == 0x80) {
        continue;
      }
      int need = (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 1;
      return need > back ? len - back : len;
    }
    return len;
  }
}
