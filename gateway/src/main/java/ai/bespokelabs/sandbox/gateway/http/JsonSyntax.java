package ai.bespokelabs.sandbox.gateway.http;

/**
 * Where and why a body is not JSON, in the words and positions of Python's {@code json} module, which the seed's
 * server reports as {@code {"type": "json_invalid", "loc": ["body", <position>], "ctx": {"error": <message>}}}.
 * Only called once a body failed to parse: it walks the text the way Python's decoder does and stops at the
 * first error. Positions count code points, as Python's string indices do.
 */
final class JsonSyntax {
  /** @param position the code point offset of the error; @param message Python's message for it */
  record Error(int position, String message) {}

  private static final class Failure extends RuntimeException {
    final Error error;

    Failure(int position, String message) {
      super(message, null, false, false);
      this.error = new Error(position, message);
    }
  }

  private final int[] s;

  private JsonSyntax(String text) {
    this.s = text.codePoints().toArray();
  }

  /** The first syntax error of {@code text}; a text that is valid JSON to Python yields "Extra data" at its end. */
  static Error locate(String text) {
    JsonSyntax p = new JsonSyntax(text);
    try {
      int end = p.value(p.ws(0));
      end = p.ws(end);
      return new Error(end, end == p.s.length ? "Expecting value" : "Extra data");
    } catch (Failure f) {
      return f.error;
    }
  }

  private int ws(int i) {
    while (i < s.length && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) {
      i++;
    }
    return i;
  }

  private int at(int i) {
    return i < s.length ? s[i] : -1;
  }

  private boolean literal(int i, String word) {
    if (i + word.length() > s.length) {
      return false;
    }
    for (int k = 0; k < word.length(); k++) {
      if (s[i + k] != word.charAt(k)) {
        return false;
      }
    }
    return true;
  }

  /** Parses one value at {@code i} (no leading whitespace) and returns the index after it. */
  private int value(int i) {
    int c = at(i);
    switch (c) {
      case '"' -> {
        return string(i);
      }
      case '{' -> {
        return object(i + 1);
      }
      case '[' -> {
        return array(i + 1);
      }
      default -> { }
    }
    for (String word : new String[] {"null", "true", "false", "NaN", "Infinity", "-Infinity"}) {
      if (literal(i, word)) {
        return i + word.length();
      }
    }
    int end = number(i);
    if (end > i) {
      return end;
    }
    throw new Failure(i, "Expecting value");
  }

  /** Python's number pattern {@code -?(0|[1-9]\d*)(\.\d+)?([eE][-+]?\d+)?}; returns {@code i} when none. */
  private int number(int i) {
    int j = i;
    if (at(j) == '-') {
      j++;
    }
    if (at(j) == '0') {
      j++;
    } else if (at(j) >= '1' && at(j) <= '9') {
      while (at(j) >= '0' && at(j) <= '9') {
        j++;
      }
    } else {
      return i;
    }
    if (at(j) == '.' && at(j + 1) >= '0' && at(j + 1) <= '9') {
      j += 2;
      while (at(j) >= '0' && at(j) <= '9') {
        j++;
      }
    }
    if (at(j) == 'e' || at(j) == 'E') {
      int k = j + 1;
      if (at(k) == '+' || at(k) == '-') {
        k++;
      }
      if (at(k) >= '0' && at(k) <= '9') {
        while (at(k) >= '0' && at(k) <= '9') {
          k++;
        }
        j = k;
      }
    }
    return j;
  }

  private int string(int start) {
    int i = start + 1;
    while (true) {
      int c = at(i);
      if (c == -1) {
        throw new Failure(start, "Unterminated string starting at");
      }
      if (c == '"') {
        return i + 1;
      }
      if (c < 0x20) {
        throw new Failure(i, "Invalid control character at");
      }
      if (c == '\\') {
        int e = at(i + 1);
        if (e == -1) {
          throw new Failure(start, "Unterminated string starting at");
        }
        if (e == 'u') {
          for (int k = i + 2; k < i + 6; k++) {
            if (Character.digit(at(k), 16) < 0) {
              throw new Failure(i, "Invalid \\uXXXX escape");
            }
          }
          i += 6;
          continue;
        }
        if ("\"\\/bfnrt".indexOf(e) < 0) {
          throw new Failure(i, "Invalid \\escape: '" + new String(Character.toChars(e)) + "'");
        }
        i += 2;
        continue;
      }
      i++;
    }
  }

  private int object(int i) {
    i = ws(i);
    if (at(i) == '}') {
      return i + 1;
    }
    while (true) {
      if (at(i) != '"') {
        throw new Failure(i, "Expecting property name enclosed in double quotes");
      }
      i = ws(string(i));
      if (at(i) != ':') {
        throw new Failure(i, "Expecting ':' delimiter");
      }
      i = ws(i + 1);
      i = ws(value(i));
      if (at(i) == '}') {
        return i + 1;
      }
      if (at(i) != ',') {
        throw new Failure(i, "Expecting ',' delimiter");
      }
      i = ws(i + 1);
    }
  }

  private int array(int i) {
    i = ws(i);
    if (at(i) == ']') {
      return i + 1;
    }
    while (true) {
      i = ws(value(i));
      if (at(i) == ']') {
        return i + 1;
      }
      if (at(i) != ',') {
        throw new Failure(i, "Expecting ',' delimiter");
      }
      i = ws(i + 1);
    }
  }
}
