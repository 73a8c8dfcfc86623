package io.kplex.spark.functions;

import io.kplex.spark.errors.Errors;
import io.kplex.spark.wire.KeyBytes;
import io.kplex.spark.wire.NullPolicy;
import io.kplex.spark.wire.OrderValues;
import io.kplex.spark.wire.Placement;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.spark.sql.catalyst.FunctionIdentifier;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Alias;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.NamedExpression$;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.MetadataBuilder;
import io.kplex.spark.compat.Scala;
import org.apache.spark.sql.catalyst.expressions.ExpressionInfo;
import org.apache.spark.sql.catalyst.expressions.V2ExpressionUtils$;
import org.apache.spark.sql.connector.catalog.functions.BoundFunction;
import org.apache.spark.sql.connector.catalog.functions.ScalarFunction;
import org.apache.spark.sql.connector.catalog.functions.UnboundFunction;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.TimestampType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;
import scala.collection.immutable.Seq;

/**
 * The SQL functions of kplex, evaluated in the JVM: {@code kplex_key(x)} (canonical key
 * bytes), {@code kplex_order(x)} (a checked order value), {@code kplex_vpartition(key, V)},
 * {@code kplex_json(value, pointer)} ({@link KplexJson}),
 * {@code kplex_confluent_payload(value [, format])} and
 * {@code kplex_confluent_schema_id(value)} ({@link ConfluentWire}), and the write's own
 * {@code kplex_write_vpartition}. They are V2 functions of the kplex catalog and are also
 * registered as session functions by the session extensions ({@code KplexExtensions}) and
 * {@link #register}.
 */
public final class KplexFunctions {
  private KplexFunctions() {}

  public static final String KEY = "kplex_key";
  public static final String ORDER = "kplex_order";
  public static final String VPARTITION = "kplex_vpartition";
  public static final String JSON = "kplex_json";
  /** Internal: the distribution every kplex write plans (see {@code write.WriteRequirements}). */
  public static final String WRITE_VPARTITION = "kplex_write_vpartition";
  /**
   * Internal: what a kplex write sorts a TIMESTAMP order by, and an integral one under
   * {@code null_order = first} (see {@code write.WriteRequirements}).
   */
  public static final String WRITE_ORDER = "kplex_write_order";

  /** Column metadata key naming the kplex function that produced a column. */
  public static final String ROLE = "kplex.function";

  /**
   * Every kplex function by name, in this order: {@code kplex_key}, {@code kplex_order},
   * {@code kplex_vpartition}, {@code kplex_json} ({@link KplexJson}),
   * {@code kplex_confluent_payload} and {@code kplex_confluent_schema_id} ({@link ConfluentWire})
   * and the write's own {@code kplex_write_vpartition} and {@code kplex_write_order}. Built once
   * and unmodifiable: the kplex catalog lists and loads them from it, {@link #register} and the
   * session extensions register them.
   */
  public static final Map<String, UnboundFunction> ALL = functions();

  private static Map<String, UnboundFunction> functions() {
    Map<String, UnboundFunction> all = new LinkedHashMap<>();
    all.put(KEY, new Unbound(KEY, "kplex_key(expr) - the canonical key bytes of expr: STRING as"
        + " UTF-8, INT and BIGINT big-endian, BINARY as is, others compact JSON with sorted fields.",
        KplexFunctions::bindKey));
    all.put(ORDER, new Unbound(ORDER, "kplex_order(expr) - marks expr as the order of a kplex write;"
        + " TIMESTAMP, TIMESTAMP_NTZ and DATE become TIMESTAMP, integral types BIGINT.",
        KplexFunctions::bindOrder));
    all.put(VPARTITION, new Unbound(VPARTITION, "kplex_vpartition(key, V) - the virtual partition"
        + " (murmur2(kplex_key(key)) & 0x7fffffff) % V.", KplexFunctions::bindVPartition));
    all.put(JSON, new Unbound(JSON, KplexJson.DESCRIPTION, KplexJson::bind));
    all.put(ConfluentWire.PAYLOAD, new Unbound(ConfluentWire.PAYLOAD, ConfluentWire.PAYLOAD_DESCRIPTION,
        ConfluentWire::bindPayload));
    all.put(ConfluentWire.SCHEMA_ID, new Unbound(ConfluentWire.SCHEMA_ID, ConfluentWire.SCHEMA_ID_DESCRIPTION,
        ConfluentWire::bindSchemaId));
    all.put(WRITE_VPARTITION, new Unbound(WRITE_VPARTITION, "kplex_write_vpartition(key, V, order,"
        + " null_key, null_order, key_column, order_column) - kplex_vpartition(key, V) as a kplex write"
        + " plans it, refusing the NULL keys and orders its policies refuse before anything is written.",
        KplexFunctions::bindWriteVPartition));
    all.put(WRITE_ORDER, new Unbound(WRITE_ORDER, "kplex_write_order(order) - the order value a kplex"
        + " write sorts by and writes, of a TIMESTAMP or TIMESTAMP_NTZ: its epoch milliseconds, the"
        + " microseconds dropped; of an integral type: itself, a NULL as -9223372036854775808.",
        KplexFunctions::bindWriteOrder));
    return Collections.unmodifiableMap(all);
  }

  interface Binder {
    BoundFunction bind(StructType input);
  }

  static final class Unbound implements UnboundFunction {
    private final String name;
    private final String description;
    private final Binder binder;

    Unbound(String name, String description, Binder binder) {
      this.name = name;
      this.description = description;
      this.binder = binder;
    }

    @Override public String name() { return name; }
    @Override public String description() { return description; }
    @Override public BoundFunction bind(StructType input) { return binder.bind(input); }
  }

  private static DataType single(StructType input, String function) {
    if (input.fields().length != 1) {
      throw Errors.unbindable(Errors.functionArgumentCount(Errors.Arity.COUNT_ONE, function, input.fields().length));
    }
    return input.fields()[0].dataType();
  }

  static BoundFunction bindKey(StructType input) {
    DataType type = single(input, KEY);
    if (type instanceof org.apache.spark.sql.types.StringType || type instanceof org.apache.spark.sql.types.BinaryType) {
      return new BytesKey(type);
    }
    return new Scalar(KEY, new DataType[] {type}, DataTypes.BinaryType, new KeyEval(KeyBytes.encoderFor(type)));
  }

  static BoundFunction bindOrder(StructType input) {
    DataType type = single(input, ORDER);
    if (!OrderValues.isSupported(type)) {
      throw Errors.unsupportedOrderType(ORDER + "(" + input.fields()[0].name() + ")", type.sql());
    }
    if (type instanceof LongType || type instanceof TimestampType) {
      return Scalar.identity(ORDER, type);
    } else if (type instanceof DateType) {
      return new Scalar(ORDER, new DataType[] {type}, DataTypes.TimestampType,
          row -> row.getInt(0) * OrderValues.MICROS_PER_DAY);
    } else if (OrderValues.isTime(type)) {
      return new Scalar(ORDER, new DataType[] {type}, DataTypes.TimestampType, row -> row.getLong(0));
    }
    OrderValues.Reader reader = OrderValues.readerFor(type);
    return new Scalar(ORDER, new DataType[] {type}, DataTypes.LongType, row -> reader.read(row, 0));
  }

  static BoundFunction bindVPartition(StructType input) {
    StructField[] f = input.fields();
    if (f.length != 2 || !(f[1].dataType() instanceof IntegerType || f[1].dataType() instanceof LongType
        || f[1].dataType() instanceof ShortType || f[1].dataType() instanceof ByteType)) {
      throw Errors.unbindable(Errors.vpartitionArguments());
    }
    KeyBytes.Encoder key = KeyBytes.encoderFor(f[0].dataType());
    OrderValues.Reader count = OrderValues.readerFor(f[1].dataType());
    return new Scalar(VPARTITION, new DataType[] {f[0].dataType(), f[1].dataType()}, DataTypes.IntegerType,
        row -> {
          long v = count.read(row, 1);
          if (v < 1 || v > Integer.MAX_VALUE) {
            throw Errors.vpartitionCount(VPARTITION, v);
          }
          return Placement.virtualPartition(key.encode(row, 0), (int) v);
        });
  }

  /**
   * The write's distribution. Spark evaluates it for every row in the shuffle that feeds
   * the writers, so a NULL key or order that the policies ({@link NullPolicy}) refuse fails
   * the whole write before any writer task has started: nothing is sent, in either delivery
   * mode. A row the writer will drop goes to its key's virtual partition, or without a key
   * to virtual partition 0.
   */
  static BoundFunction bindWriteVPartition(StructType input) {
    StructField[] f = input.fields();
    if (f.length != WriteArgs.COUNT || OrderValues.readerFor(f[WriteArgs.PARTITIONS].dataType()) == null
        || OrderValues.readerFor(f[WriteArgs.ORDER].dataType()) == null) {
      throw Errors.unbindable(Errors.writeVPartitionArguments());
    }
    DataType[] types = new DataType[f.length];
    for (int i = 0; i < f.length; i++) types[i] = f[i].dataType();
    return new Scalar(WRITE_VPARTITION, types, DataTypes.IntegerType, true, new WriteVPartition(types));
  }

  /**
   * The sort key of a write whose order is a TIMESTAMP (microseconds): its order value, the
   * epoch milliseconds that the {@code kplex.order} header and the record's timestamp carry.
   * Sorted on the microseconds themselves, records of one millisecond would go by their
   * microseconds where a stream's held records and a read-time table go by key, then value.
   * Of an integral order (a write under {@code null_order = first}): the value itself, and for
   * a NULL the value the write gives it, {@link Long#MIN_VALUE}, so that a NULL ties with that
   * value instead of sorting before it.
   */
  static BoundFunction bindWriteOrder(StructType input) {
    DataType type = single(input, WRITE_ORDER);
    if (type instanceof TimestampType || type instanceof org.apache.spark.sql.types.TimestampNTZType) {
      return new MillisOrder(type);
    }
    OrderValues.Reader reader = OrderValues.readerFor(type);
    if (reader == null) {
      throw Errors.unsupportedOrderType(WRITE_ORDER + "(" + input.fields()[0].name() + ")", type.sql());
    }
    return new Scalar(WRITE_ORDER, new DataType[] {type}, DataTypes.LongType, true,
        row -> row.isNullAt(0) ? Long.MIN_VALUE : reader.read(row, 0));
  }

  /** kplex_write_order, called by Spark's generated code through its {@code invoke} method. */
  public static final class MillisOrder implements ScalarFunction<Long> {
    private static final long serialVersionUID = 1L;
    private final DataType input;

    MillisOrder(DataType input) {
      this.input = input;
    }

    public long invoke(long micros) {
      return Math.floorDiv(micros, 1000L);
    }

    @Override
    public Long produceResult(InternalRow args) {
      return args.isNullAt(0) ? null : invoke(args.getLong(0));
    }

    @Override public DataType[] inputTypes() { return new DataType[] {input}; }
    @Override public DataType resultType() { return DataTypes.LongType; }
    @Override public String name() { return WRITE_ORDER; }
    @Override public String canonicalName() { return "kplex." + WRITE_ORDER + "(" + input.catalogString() + ")"; }
    @Override public String toString() { return canonicalName(); }
  }

  /** The arguments of {@code kplex_write_vpartition}, by position, as {@code write.WriteRequirements} passes them. */
  static final class WriteArgs {
    private WriteArgs() {}

    static final int KEY = 0;
    static final int PARTITIONS = 1;
    static final int ORDER = 2;
    /** The literal policies and column names of the write, the same in every row. */
    static final int NULL_KEY = 3;
    static final int NULL_ORDER = 4;
    static final int KEY_COLUMN = 5;
    static final int ORDER_COLUMN = 6;
    static final int COUNT = 7;
  }

  /** kplex_write_vpartition evaluated: the NULL policy, read once from the literal arguments, then the placement. */
  static final class WriteVPartition implements Eval {
    private static final long serialVersionUID = 1L;
    private final KeyBytes.Encoder key;
    private final OrderValues.Reader count;
    private final OrderValues.Reader order;
    /** From the first row's literal arguments (a race between threads builds an equal one). */
    private NullPolicy nulls;

    WriteVPartition(DataType[] types) {
      this.key = KeyBytes.encoderFor(types[WriteArgs.KEY]);
      this.count = OrderValues.readerFor(types[WriteArgs.PARTITIONS]);
      this.order = OrderValues.readerFor(types[WriteArgs.ORDER]);
    }

    @Override
    public Object apply(InternalRow row) {
      NullPolicy policy = nulls;
      if (policy == null) {
        policy = NullPolicy.of(text(row, WriteArgs.NULL_KEY), text(row, WriteArgs.NULL_ORDER),
            text(row, WriteArgs.KEY_COLUMN), text(row, WriteArgs.ORDER_COLUMN));
        nulls = policy;
      }
      boolean nullOrder = row.isNullAt(WriteArgs.ORDER);
      byte[] keyBytes = row.isNullAt(WriteArgs.KEY) ? null : key.encode(row, WriteArgs.KEY);
      policy.admits(keyBytes, nullOrder, nullOrder ? Long.MIN_VALUE : order.read(row, WriteArgs.ORDER));
      return keyBytes == null ? 0 : Placement.virtualPartition(keyBytes, (int) count.read(row, WriteArgs.PARTITIONS));
    }

    private static String text(InternalRow row, int arg) {
      return row.getUTF8String(arg).toString();
    }
  }

  interface Eval extends java.io.Serializable {
    Object apply(InternalRow args);
  }

  static final class KeyEval implements Eval {
    private final KeyBytes.Encoder encoder;
    KeyEval(KeyBytes.Encoder encoder) { this.encoder = encoder; }
    @Override public Object apply(InternalRow args) { return encoder.encode(args, 0); }
  }

  /**
   * A bound kplex function; unless it {@code seesNulls}, NULL in any argument gives NULL
   * (the writer names it).
   */
  static final class Scalar implements ScalarFunction<Object> {
    private final String name;
    private final DataType[] inputs;
    private final DataType result;
    private final boolean seesNulls;
    private final Eval eval;
    /** Returns its one argument unchanged: the Builder leaves the argument itself in the plan. */
    final boolean identity;

    Scalar(String name, DataType[] inputs, DataType result, Eval eval) {
      this(name, inputs, result, false, eval, false);
    }

    Scalar(String name, DataType[] inputs, DataType result, boolean seesNulls, Eval eval) {
      this(name, inputs, result, seesNulls, eval, false);
    }

    private Scalar(String name, DataType[] inputs, DataType result, boolean seesNulls, Eval eval,
        boolean identity) {
      this.name = name;
      this.inputs = inputs;
      this.result = result;
      this.seesNulls = seesNulls;
      this.eval = eval;
      this.identity = identity;
    }

    /**
     * A function of one argument that is the argument (kplex_order of a BIGINT or TIMESTAMP).
     * The call is then just the Builder's tagged alias, and Spark generates code for the
     * argument: as a bound function it would be an ApplyFunctionExpression, which Spark
     * evaluates without generated code, and with it every expression under it (a CAST of a
     * JSON field, say): interpreted, and magic methods called by reflection.
     */
    static Scalar identity(String name, DataType type) {
      return new Scalar(name, new DataType[] {type}, type, false, row -> row.get(0, type), true);
    }

    @Override public DataType[] inputTypes() { return inputs; }
    @Override public DataType resultType() { return result; }
    @Override public String name() { return name; }
    @Override public String canonicalName() {
      StringBuilder s = new StringBuilder("kplex." + name + "(");
      for (int i = 0; i < inputs.length; i++) s.append(i == 0 ? "" : ",").append(inputs[i].catalogString());
      return s.append(")").toString();
    }

    @Override
    public String toString() {
      return canonicalName();
    }

    @Override
    public Object produceResult(InternalRow args) {
      for (int i = 0; i < inputs.length && !seesNulls; i++) {
        if (args.isNullAt(i)) {
          return null;
        }
      }
      return eval.apply(args);
    }
  }

  /**
   * kplex_key of a STRING (its UTF-8) or BINARY (itself), the common keys, called by
   * Spark's generated code through its {@code invoke} methods, with no row built per call.
   */
  public static final class BytesKey implements ScalarFunction<byte[]> {
    private static final long serialVersionUID = 1L;
    private final DataType input;

    BytesKey(DataType input) {
      this.input = input;
    }

    public byte[] invoke(UTF8String key) {
      return key == null ? null : key.getBytes();
    }

    public byte[] invoke(byte[] key) {
      return key;
    }

    @Override
    public byte[] produceResult(InternalRow args) {
      if (args.isNullAt(0)) return null;
      return input instanceof org.apache.spark.sql.types.BinaryType ? args.getBinary(0)
          : args.getUTF8String(0).getBytes();
    }

    @Override public DataType[] inputTypes() { return new DataType[] {input}; }
    @Override public DataType resultType() { return DataTypes.BinaryType; }
    @Override public String name() { return KEY; }
    @Override public String canonicalName() { return "kplex." + KEY + "(" + input.catalogString() + ")"; }
    @Override public String toString() { return canonicalName(); }
  }

  /** Builds the Catalyst expression of a session function call: binds, then resolves. */
  public static final class Builder extends io.kplex.spark.compat.ExpressionBuilder {
    private final UnboundFunction function;

    public Builder(UnboundFunction function) {
      this.function = function;
    }

    @Override
    protected Expression build(java.util.List<Expression> args) {
      if (function.name().equals(JSON) && args.size() == 2 && args.get(1).foldable()) {
        Object pointer = args.get(1).eval(null);
        if (pointer != null) JsonPointer.parse(pointer.toString()); // a bad literal fails the query here
      }
      StructType input = new StructType();
      for (int i = 0; i < args.size(); i++) {
        Expression arg = args.get(i);
        input = input.add(arg.sql(), arg.dataType(), arg.nullable());
      }
      BoundFunction bound = function.bind(input);
      Expression call = bound instanceof Scalar s && s.identity
          ? args.get(0)
          : V2ExpressionUtils$.MODULE$.resolveScalarFunction((ScalarFunction<?>) bound, Scala.list(args));
      // Named like the call and tagged with its role, so that a kplex write finds its key
      // and order columns even when the user renames them.
      StringBuilder name = new StringBuilder(function.name()).append('(');
      for (int i = 0; i < args.size(); i++) name.append(i == 0 ? "" : ", ").append(args.get(i).sql());
      name.append(')');
      Metadata role = new MetadataBuilder().putString(ROLE, function.name()).build();
      Seq<String> none = Scala.list(java.util.List.<String>of());
      return new Alias(call, name.toString(), NamedExpression$.MODULE$.newExprId(), none,
          scala.Option.apply(role), none);
    }
  }

  public static ExpressionInfo info(UnboundFunction f) {
    return new ExpressionInfo(KplexFunctions.class.getName(), null, f.name(), f.description(), "");
  }

  /**
   * Registers the functions in a running session (for sessions built without
   * {@code spark.sql.extensions}, e.g. on Databricks); the Python wrapper calls it. A
   * function the extension already registered is left alone (re-registering it would log
   * a "replaced a previously registered function" warning).
   */
  public static void register(org.apache.spark.sql.SparkSession session) {
    org.apache.spark.sql.internal.SessionState state = io.kplex.spark.compat.Sessions.state(session);
    for (UnboundFunction f : ALL.values()) {
      FunctionIdentifier id = registryId(f.name());
      if (state.functionRegistry().functionExists(id)) continue;
      state.functionRegistry().registerFunction(id, info(f), new Builder(f));
    }
  }

  /**
   * The identifier a session's function registry keeps a function under: its bare name
   * on Spark 4.0 and 4.1; 4.3's registry takes only qualified ones, and Spark qualifies
   * the extensions' functions with {@code FunctionRegistry.builtinFunctionIdentifier}
   * (looked up by reflection: older Sparks do not have it).
   */
  static FunctionIdentifier registryId(String name) {
    try {
      Class<?> registry = Class.forName("org.apache.spark.sql.catalyst.analysis.FunctionRegistry$");
      Object module = registry.getField("MODULE$").get(null);
      return (FunctionIdentifier) registry.getMethod("builtinFunctionIdentifier", String.class).invoke(module, name);
    } catch (NoSuchMethodException e) {
      return new FunctionIdentifier(name);
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("kplex: cannot name a function for this Spark's registry", e);
    }
  }
}
