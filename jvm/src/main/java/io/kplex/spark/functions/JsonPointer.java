package io.kplex.spark.functions;

import io.kplex.spark.errors.Errors;
import java.io.Serializable;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * A JSON Pointer (RFC 6901), the way original kplex jobs name a key or a timestamp
 * ({@code /userid}), evaluated over UTF-8 JSON bytes in place: no parser object, no
 * decoding of what the pointer does not reach, and it stops at the value it names.
 *
 * <p>A token is a member name in an object and, when it is digits without a leading
 * zero, an index in an array ({@code -}, past the end, never names a value). The scan
 * checks the structure it walks through, not the parts of the document after the value
 * it returns: like Spark's {@code get_json_object}, a document it cannot walk gives
 * "no value" rather than an error.
 */
final class JsonPointer implements Serializable {
  private static final long serialVersionUID = 1L;

  final String text;
  private final String[] names;
  private final byte[][] nameBytes;
  private final int[] indexes;

  private JsonPointer(String text, String[] names) {
    this.text = text;
    this.names = names;
    this.nameBytes = new byte[names.length][];
    this.indexes = new int[names.length];
    for (int i = 0; i < names.length; i++) {
      nameBytes[i] = names[i].getBytes(StandardCharsets.UTF_8);
      indexes[i] = arrayIndex(names[i]);
    }
  }

  /** How many reference tokens the pointer has (0: the whole document). */
  int size() {
    return names.length;
  }

  /** Reference token {@code i}, unescaped ({@code ~1} is '/', {@code ~0} is '~'). */
  String token(int i) {
    return names[i];
  }

  /** Parses {@code text}; a malformed pointer is an error naming it. */
  static JsonPointer parse(String text) {
    if (text.isEmpty()) {
      return new JsonPointer(text, new String[0]);
    }
    if (text.charAt(0) != '/') {
      throw Errors.jsonPointerNoSlash(text);
    }
    String[] raw = text.substring(1).split("/", -1);
    String[] names = new String[raw.length];
    for (int i = 0; i < raw.length; i++) {
      String token = raw[i];
      for (int t = token.indexOf('~'); t >= 0; t = token.indexOf('~', t + 1)) {
        if (t + 1 >= token.length() || (token.charAt(t + 1) != '0' && token.charAt(t + 1) != '1')) {
          throw Errors.jsonPointerTilde(text);
        }
      }
      names[i] = token.replace("~1", "/").replace("~0", "~");
    }
    return new JsonPointer(text, names);
  }

  private static int arrayIndex(String token) {
    if (token.isEmpty() || token.length() > 9 || (token.length() > 1 && token.charAt(0) == '0')) {
      return -1;
    }
    for (int i = 0; i < token.length(); i++) {
      if (token.charAt(i) < '0' || token.charAt(i) > '9') return -1;
    }
    return Integer.parseInt(token);
  }

  /**
   * The value the pointer names in {@code json[from, to)} as the span
   * {@code start << 32 | end}, or -1 when there is none (missing member, index past the
   * end, a scalar where a container was expected, or a document it cannot walk).
   */
  long find(byte[] json, int from, int to) {
    int p = space(json, from, to);
    for (int t = 0; t < names.length && p >= 0; t++) {
      if (p >= to) return -1;
      byte c = json[p];
      if (c == '{') {
        p = member(json, p + 1, to, t);
      } else if (c == '[' && indexes[t] >= 0) {
        p = element(json, p + 1, to, indexes[t]);
      } else {
        return -1;
      }
    }
    if (p < 0 || p >= to) return -1;
    int end = skipValue(json, p, to);
    return end < 0 ? -1 : ((long) p << 32) | end;
  }

  /** The start of the value of member {@code names[t]} of the object whose body starts at p. */
  private int member(byte[] json, int p, int to, int t) {
    p = space(json, p, to);
    if (p < to && json[p] == '}') return -1;
    while (p >= 0 && p < to && json[p] == '"') {
      int nameEnd = skipString(json, p, to);
      if (nameEnd < 0) return -1;
      boolean match = sameName(json, p + 1, nameEnd - 1, t);
      p = space(json, nameEnd, to);
      if (p >= to || json[p] != ':') return -1;
      p = space(json, p + 1, to);
      if (match) return p;
      p = nextItem(json, p, to);
    }
    return -1;
  }

  /** The start of element {@code index} of the array whose body starts at p. */
  private static int element(byte[] json, int p, int to, int index) {
    p = space(json, p, to);
    if (p < to && json[p] == ']') return -1;
    for (int i = 0; p >= 0 && p < to; i++) {
      if (i == index) return p;
      p = nextItem(json, p, to);
    }
    return -1;
  }

  /** Past the value at p and the ',' after it: where the container's next item starts, or -1. */
  private static int nextItem(byte[] json, int p, int to) {
    p = skipValue(json, p, to);
    if (p < 0) return -1;
    p = space(json, p, to);
    if (p >= to || json[p] != ',') return -1;
    return space(json, p + 1, to);
  }

  /** Whether the member name in json[from, to) (quotes excluded, still escaped) is names[t]. */
  private boolean sameName(byte[] json, int from, int to, int t) {
    byte[] want = nameBytes[t];
    boolean escaped = false;
    for (int i = from; i < to; i++) {
      if (json[i] == '\\') {
        escaped = true;
        break;
      }
    }
    if (!escaped) {
      return Arrays.equals(json, from, to, want, 0, want.length);
    }
    String name = unescape(json, from, to);
    return name != null && name.equals(names[t]);
  }

  static int space(byte[] json, int p, int to) {
    while (p < to) {
      byte c = json[p];
      if (c != ' ' && c != '\n' && c != '\r' && c != '\t') break;
      p++;
    }
    return p;
  }

  /** The end (after the closing quote) of the string starting at json[p] == '"', or -1. */
  static int skipString(byte[] json, int p, int to) {
    for (int i = p + 1; i < to; i++) {
      byte c = json[i];
      if (c == '"') return i + 1;
      if (c == '\\') i++;
    }
    return -1;
  }

  /** The end of the value starting at p, or -1 if none starts there or it is unterminated. */
  static int skipValue(byte[] json, int p, int to) {
    if (p >= to) return -1;
    byte c = json[p];
    if (c == '"') return skipString(json, p, to);
    if (c == '{' || c == '[') {
      int depth = 0;
      for (int i = p; i < to; i++) {
        byte b = json[i];
        if (b == '"') {
          i = skipString(json, i, to);
          if (i < 0) return -1;
          i--;
        } else if (b == '{' || b == '[') {
          depth++;
        } else if (b == '}' || b == ']') {
          if (--depth == 0) return i + 1;
        }
      }
      return -1;
    }
    int i = p;
    while (i < to) {
      byte b = json[i];
      if ((b >= '0' && b <= '9') || (b >= 'a' && b <= 'z') || b == '-' || b == '+' || b == '.' || b == 'E') {
        i++;
      } else {
        break;
      }
    }
    return i == p ? -1 : i;
  }

  /** The text of the JSON string body json[from, to) (quotes excluded), or null if its escapes are bad. */
  static String unescape(byte[] json, int from, int to) {
    StringBuilder out = new StringBuilder(to - from);
    int plain = from;
    for (int i = from; i < to; i++) {
      if (json[i] != '\\') continue;
      out.append(new String(json, plain, i - plain, StandardCharsets.UTF_8));
      if (++i >= to) return null;
      switch (json[i]) {
        case '"': out.append('"'); break;
        case '\\': out.append('\\'); break;
        case '/': out.append('/'); break;
        case 'b': out.append('\b'); break;
        case 'f': out.append('\f'); break;
        case 'n': out.append('\n'); break;
        case 'r': out.append('\r'); break;
        case 't': out.append('\t'); break;
        case 'u':
          if (i + 4 >= to) return null;
          int code = 0;
          for (int k = 1; k <= 4; k++) {
            int d = Character.digit(json[i + k], 16);
            if (d < 0) return null;
            code = code * 16 + d;
          }
          out.append((char) code);
          i += 4;
          break;
        default:
          return null;
      }
      plain = i + 1;
    }
    return out.append(new String(json, plain, to - plain, StandardCharsets.UTF_8)).toString();
  }

  /** json[from, to) without the whitespace outside strings. */
  static byte[] compact(byte[] json, int from, int to) {
    byte[] out = new byte[to - from];
    int n = 0;
    for (int i = from; i < to; i++) {
      byte c = json[i];
      if (c == '"') {
        int end = skipString(json, i, to);
        if (end < 0) end = to;
        System.arraycopy(json, i, out, n, end - i);
        n += end - i;
        i = end - 1;
      } else if (c != ' ' && c != '\n' && c != '\r' && c != '\t') {
        out[n++] = c;
      }
    }
    return n == out.length ? out : Arrays.copyOf(out, n);
  }

  @Override
  public String toString() {
    return text;
  }
}
