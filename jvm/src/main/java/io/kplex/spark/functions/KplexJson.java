package io.kplex.spark.functions;

import io.kplex.spark.errors.Errors;
import java.util.Arrays;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.catalog.functions.BoundFunction;
import org.apache.spark.sql.connector.catalog.functions.ScalarFunction;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.NullType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.Platform;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * {@code kplex_json(json, pointer)}: the value at a JSON pointer of a STRING or BINARY
 * JSON document, as STRING, read in place by {@link JsonPointer}. A string gives its
 * text, a number or boolean its literal, an object or array its JSON without
 * whitespace; JSON null, a missing value or a document the pointer cannot walk give
 * NULL, as {@code get_json_object} does.
 *
 * <p>Spark calls the {@code invoke} methods from generated code (the "magic method" of a
 * V2 scalar function), with no row built per call.
 */
public final class KplexJson {
  private KplexJson() {}

  static final String DESCRIPTION = "kplex_json(json, pointer) - the value at a JSON pointer"
      + " (RFC 6901, e.g. '/userid') of a STRING or BINARY JSON document, as STRING; NULL when"
      + " there is none. Reads the bytes in place and stops at the value.";

  static BoundFunction bind(StructType input) {
    if (input.fields().length != 2) {
      throw Errors.unbindable(Errors.functionArgumentCount(Errors.Arity.COUNT_JSON, KplexFunctions.JSON,
          input.fields().length));
    }
    DataType json = input.fields()[0].dataType();
    DataType pointer = input.fields()[1].dataType();
    if (!(json instanceof StringType) && !(json instanceof BinaryType) && !(json instanceof NullType)) {
      throw Errors.unbindable(Errors.functionArgumentType(Errors.Argument.TYPE_JSON_DOCUMENT, KplexFunctions.JSON,
          input.fields()[0].name(), json.sql()));
    }
    if (!(pointer instanceof StringType) && !(pointer instanceof NullType)) {
      throw Errors.unbindable(Errors.functionArgumentType(Errors.Argument.TYPE_JSON_POINTER, KplexFunctions.JSON,
          input.fields()[1].name(), pointer.sql()));
    }
    return new Function(json, pointer);
  }

  /** The value at {@code pointer} of json[from, to), or null. */
  static UTF8String extract(JsonPointer pointer, byte[] json, int from, int to) {
    long span = pointer.find(json, from, to);
    if (span < 0) return null;
    int start = (int) (span >>> 32);
    int end = (int) span;
    byte c = json[start];
    if (c == '"') {
      for (int i = start + 1; i < end - 1; i++) {
        if (json[i] == '\\') {
          String text = JsonPointer.unescape(json, start + 1, end - 1);
          return text == null ? null : UTF8String.fromString(text);
        }
      }
      return UTF8String.fromBytes(Arrays.copyOfRange(json, start + 1, end - 1));
    }
    if (c == '{' || c == '[') {
      return UTF8String.fromBytes(JsonPointer.compact(json, start, end));
    }
    if (c >= 'a' && c <= 'z') {
      return isWord(json, start, end, TRUE) || isWord(json, start, end, FALSE)
          ? UTF8String.fromBytes(Arrays.copyOfRange(json, start, end)) : null;
    }
    return UTF8String.fromBytes(Arrays.copyOfRange(json, start, end));
  }

  private static final byte[] TRUE = {'t', 'r', 'u', 'e'};
  private static final byte[] FALSE = {'f', 'a', 'l', 's', 'e'};

  private static boolean isWord(byte[] json, int start, int end, byte[] word) {
    return Arrays.equals(json, start, end, word, 0, word.length);
  }

  /** The bound function; one instance per argument type. */
  public static final class Function implements ScalarFunction<UTF8String> {
    private static final long serialVersionUID = 1L;

    private final DataType jsonType;
    private final DataType pointerType;
    /** The pointer of the previous call, parsed: pointers are nearly always a literal. */
    private transient volatile Parsed last;

    /** A NULL literal argument (type VOID) is taken as is: the result is then always NULL. */
    Function(DataType jsonType, DataType pointerType) {
      this.jsonType = jsonType;
      this.pointerType = pointerType;
    }

    private static final class Parsed {
      final UTF8String text;
      final JsonPointer pointer;

      Parsed(UTF8String text, JsonPointer pointer) {
        this.text = text;
        this.pointer = pointer;
      }
    }

    private JsonPointer pointer(UTF8String text) {
      Parsed p = last;
      if (p != null && (p.text == text || p.text.equals(text))) {
        return p.pointer;
      }
      JsonPointer parsed = JsonPointer.parse(text.toString());
      last = new Parsed(text.copy(), parsed);
      return parsed;
    }

    public UTF8String invoke(byte[] json, UTF8String pointer) {
      if (json == null || pointer == null) return null;
      return extract(pointer(pointer), json, 0, json.length);
    }

    public UTF8String invoke(UTF8String json, UTF8String pointer) {
      if (json == null || pointer == null) return null;
      JsonPointer p = pointer(pointer);
      if (json.getBaseObject() instanceof byte[] bytes) {
        int from = (int) (json.getBaseOffset() - Platform.BYTE_ARRAY_OFFSET);
        return extract(p, bytes, from, from + json.numBytes());
      }
      byte[] bytes = json.getBytes();
      return extract(p, bytes, 0, bytes.length);
    }

    @Override
    public UTF8String produceResult(InternalRow args) {
      if (args.isNullAt(0) || args.isNullAt(1)) return null;
      return jsonType instanceof BinaryType ? invoke(args.getBinary(0), args.getUTF8String(1))
          : invoke(args.getUTF8String(0), args.getUTF8String(1));
    }

    @Override public DataType[] inputTypes() { return new DataType[] {jsonType, pointerType}; }
    @Override public DataType resultType() { return DataTypes.StringType; }
    @Override public String name() { return KplexFunctions.JSON; }
    @Override public String canonicalName() {
      return "kplex." + KplexFunctions.JSON + "(" + jsonType.catalogString() + "," + pointerType.catalogString() + ")";
    }
    @Override public String toString() { return canonicalName(); }
  }
}
