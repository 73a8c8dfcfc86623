package io.kplex.spark.plan;

import io.kplex.spark.catalog.KplexTable;
import io.kplex.spark.functions.HighBefore;
import io.kplex.spark.write.WriteSchema;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.catalyst.expressions.Alias;
import org.apache.spark.sql.catalyst.expressions.ApplyFunctionExpression;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.plans.logical.AppendData;
import org.apache.spark.sql.catalyst.plans.logical.Filter;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.catalyst.plans.logical.SubqueryAlias;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.catalyst.streaming.StreamingRelationV2;
import org.apache.spark.sql.catalyst.streaming.WriteToStream;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.MetadataBuilder;
import scala.Option;
import scala.collection.immutable.Seq;
import io.kplex.spark.compat.Scala;

/**
 * An analyzer rule: a streaming query that writes a kplex table from kplex's source,
 * through projections and filters (the usual {@code SELECT kplex_key(..), kplex_order(..),
 * value FROM STREAM(kplex.topic) WHERE ..}), also writes each row's source position: its
 * partition (a kplex table's: its virtual partition), offset and timestamp, and the largest
 * order value before it on that partition
 * in the micro-batch ({@link HighBefore}), as hidden columns
 * ({@link WriteSchema#POSITION_COLUMNS}). With them the sink judges lateness per source
 * partition and releases by the slowest partition ({@link io.kplex.spark.time.EventTime}),
 * so the output does not depend on how the input was paced. Other plans (joins,
 * aggregations, other sources) are left as they are: their input counts as one partition.
 *
 * <p>A batch INSERT into a kplex table from a kplex table or topic, through projections and
 * filters, writes each row's source partition and offset, the offset column naming the source
 * topic in its metadata ({@link WriteSchema#SOURCE_TOPIC}): the write records what it read with
 * its commit, so a stream over the same records later knows them as written.
 */
public final class SourcePositions extends Rule<LogicalPlan> {
  /** A plan that outputs what its original did, then the source's partition, offset and timestamp. */
  private record Positioned(LogicalPlan plan, Attribute partition, Attribute offset, Attribute timestamp,
      Attribute ordered, String topic, String bootstrap, String cluster, Rows rows) {}

  /**
   * What the plan above the source keeps of its rows: the conditions of its filters, each with the
   * columns its projections below define spelled out as what defines them ({@code aliases}).
   * {@code streamed}: a stream's, whose read is recorded as everything below where it stopped in
   * every partition ({@code source.ends}), so a bound of partition or offset is a filter too.
   */
  private record Rows(java.util.Map<org.apache.spark.sql.catalyst.expressions.ExprId, Expression> aliases,
      List<String> conditions, boolean streamed) {
    static final Rows ALL = new Rows(java.util.Map.of(), List.of(), false);
    static final Rows STREAMED = new Rows(java.util.Map.of(), List.of(), true);

    Rows projected(Project project) {
      java.util.Map<org.apache.spark.sql.catalyst.expressions.ExprId, Expression> out = new java.util.HashMap<>(aliases);
      for (NamedExpression e : Scala.asJava(project.projectList())) {
        if (e instanceof Alias a) out.put(a.exprId(), spelled(a.child()));
      }
      return new Rows(out, conditions, streamed);
    }

    /**
     * These rows through a filter of {@code condition}, taken conjunct by conjunct (so that
     * {@code WHERE a AND b} and {@code .where(a).where(b)} keep alike). A conjunct that bounds
     * the source's partition or offset by constants ({@code partition = 0 AND offset >= 500}, how
     * INSERTs read on from each other) picks which range is read, not which of its rows are
     * kept: it is left out. One whose rows cannot be told again from its text (a subquery, a
     * non-deterministic function, an expression without SQL text) keeps rows no other writer
     * is known to keep: it makes the digest one of its own. A stream's bounds are kept ({@code streamed}).
     */
    Rows filtered(Expression condition, Attribute partition, Attribute offset) {
      List<String> out = new ArrayList<>(conditions);
      for (Expression conjunct : conjuncts(spelled(condition))) {
        if (!streamed && bounds(conjunct, partition, offset)) continue;
        String text = sql(conjunct);
        if (text == null || !conjunct.deterministic() || conjunct.exists(
            new scala.runtime.AbstractFunction1<Expression, Object>() {
              @Override
              public Object apply(Expression e) {
                return e instanceof org.apache.spark.sql.catalyst.expressions.SubqueryExpression;
              }
            })) {
          text = "unrepeatable " + java.util.UUID.randomUUID();
        }
        out.add(text);
      }
      java.util.Collections.sort(out);
      return new Rows(aliases, out, streamed);
    }

    private static List<Expression> conjuncts(Expression e) {
      return split(e, org.apache.spark.sql.catalyst.expressions.And.class);
    }

    private static List<Expression> disjuncts(Expression e) {
      return split(e, org.apache.spark.sql.catalyst.expressions.Or.class);
    }

    /** {@code e}'s operands of nested {@code op} ({@code a AND (b AND c)}: a, b, c). */
    private static List<Expression> split(Expression e, Class<? extends Expression> op) {
      if (!op.isInstance(e)) return List.of(e);
      List<Expression> out = new ArrayList<>();
      for (Expression child : Scala.asJava(e.children())) out.addAll(split(child, op));
      return out;
    }

    /**
     * Whether {@code e} bounds only the source's partition or offset by constants, picking one
     * range of offsets in each partition: comparisons of either column with a constant, and
     * {@code partition IN (...)}, joined by AND, or by OR where the offsets each partition gets
     * stay one range (no two sides bounding the offset admit the same partition: each pins its
     * own by {@code partition = c} or {@code IN}). {@code offset < 10 OR offset >= 100} picks two
     * ranges apart: the records between are not read, so it is a row filter, not a bound.
     */
    private static boolean bounds(Expression e, Attribute partition, Attribute offset) {
      if (e instanceof org.apache.spark.sql.catalyst.expressions.And) {
        for (Expression c : Scala.asJava(e.children())) if (!bounds(c, partition, offset)) return false;
        return true;
      }
      if (e instanceof org.apache.spark.sql.catalyst.expressions.Or) {
        java.util.Set<String> pinned = new java.util.HashSet<>();
        for (Expression side : disjuncts(e)) {
          if (!bounds(side, partition, offset)) return false;
          if (!side.references().contains(offset)) continue;  // all of a partition's offsets, or none
          java.util.Set<String> own = pinnedPartitions(side, partition);
          if (own == null) return false;
          for (String p : own) if (!pinned.add(p)) return false;
        }
        return true;
      }
      if (e instanceof org.apache.spark.sql.catalyst.expressions.In in) {
        if (!isColumn(in.value(), partition)) return false;
        for (Expression c : Scala.asJava(in.list())) if (!c.foldable()) return false;
        return true;
      }
      if (e instanceof org.apache.spark.sql.catalyst.expressions.BinaryComparison cmp
          && !(e instanceof org.apache.spark.sql.catalyst.expressions.EqualNullSafe)) {
        Expression l = cmp.left(), r = cmp.right();
        boolean column = isColumn(l, partition) || isColumn(l, offset) || isColumn(r, partition) || isColumn(r, offset);
        return column && (l.foldable() || r.foldable());
      }
      return false;
    }


    /**
     * The partitions a conjunction admits, where one of its conjuncts names them
     * ({@code partition = c}, {@code partition IN (...)}; as plain numbers), else null.
     */
    private static java.util.Set<String> pinnedPartitions(Expression e, Attribute partition) {
      java.util.Set<String> out = null;
      for (Expression c : conjuncts(e)) {
        java.util.Set<String> named = null;
        if (c instanceof org.apache.spark.sql.catalyst.expressions.In in && isColumn(in.value(), partition)) {
          named = new java.util.HashSet<>();
          for (Expression v : Scala.asJava(in.list())) named.add(number(v));
        } else if (c instanceof org.apache.spark.sql.catalyst.expressions.EqualTo eq) {
          Expression value = isColumn(eq.left(), partition) ? eq.right() : isColumn(eq.right(), partition) ? eq.left() : null;
          if (value != null && value.foldable()) {
            named = new java.util.HashSet<>();
            named.add(number(value));
          }
        }
        if (named == null) continue;
        if (named.contains(null)) return null;
        if (out == null) out = new java.util.HashSet<>(named);
        else out.retainAll(named);
      }
      return out;
    }

    /** A constant's value as a plain number ({@code 1}, {@code 1.0} and {@code '1'} alike), or null. */
    private static String number(Expression constant) {
      try {
        Object v = constant.eval(null);
        return v == null ? null : new java.math.BigDecimal(v.toString()).stripTrailingZeros().toPlainString();
      } catch (RuntimeException e) {
        return null;
      }
    }

    /**
     * {@code e} is the column {@code c} itself, or a cast of it that keeps its order (a comparison
     * with a literal of another type makes one): a cast to text does not ({@code '10' < '5'}).
     */
    private static boolean isColumn(Expression e, Attribute c) {
      while (e instanceof org.apache.spark.sql.catalyst.expressions.Cast cast && keepsOrder(cast)) e = cast.child();
      return e instanceof Attribute a && a.exprId().equals(c.exprId());
    }

    /** A cast of a number to a number type that holds it whole or rounds it (never wraps around, never text). */
    private static boolean keepsOrder(org.apache.spark.sql.catalyst.expressions.Cast cast) {
      org.apache.spark.sql.types.DataType to = cast.dataType(), from = cast.child().dataType();
      int digits = from instanceof org.apache.spark.sql.types.LongType ? 19 : from instanceof org.apache.spark.sql.types.IntegerType ? 10
          : from instanceof org.apache.spark.sql.types.DecimalType d ? d.precision() - d.scale() : 0;
      if (digits == 0) return false;
      return to instanceof org.apache.spark.sql.types.LongType && digits <= 19
          || to instanceof org.apache.spark.sql.types.DoubleType || to instanceof org.apache.spark.sql.types.FloatType
          || to instanceof org.apache.spark.sql.types.DecimalType d && d.precision() - d.scale() >= digits;
    }

    /**
     * {@code e} with each column a projection defined spelled out, no column qualified and no
     * name given inside it: as SQL's {@code FROM kplex.t ... WHERE} and a DataFrame's
     * {@code where} give the same condition.
     */
    private Expression spelled(Expression e) {
      return e.transformUp(new scala.runtime.AbstractPartialFunction<Expression, Expression>() {
        @Override
        public boolean isDefinedAt(Expression x) {
          return x instanceof Attribute || x instanceof Alias;
        }

        @Override
        public Expression apply(Expression x) {
          if (x instanceof Alias named) return named.child();  // (SQL names a function's result inside a condition)
          Attribute a = (Attribute) x;
          Expression defined = aliases.get(a.exprId());
          return defined != null ? defined : a.withQualifier(Scala.list(List.<String>of()));
        }
      });
    }

    /** Its SQL text, or null where it has none. */
    private static String sql(Expression e) {
      try {
        return e.sql();
      } catch (RuntimeException notSql) {
        return null;
      }
    }

    /**
     * A digest of the filters' conditions (null: no filter, every row of what was read reaches
     * the write): writers that read the same records through the same filters write the same rows.
     */
    String digest() {
      if (conditions.isEmpty()) return null;
      try {
        byte[] d = java.security.MessageDigest.getInstance("SHA-256")
            .digest(String.join("\n", conditions).getBytes(java.nio.charset.StandardCharsets.UTF_8));  // sorted
        return java.util.HexFormat.of().formatHex(d, 0, 8);
      } catch (java.security.NoSuchAlgorithmException e) {
        throw new IllegalStateException(e);
      }
    }
  }

  @Override
  public LogicalPlan apply(LogicalPlan plan) {
    if (plan instanceof AppendData append) return insert(append);
    if (!(plan instanceof WriteToStream write) || !(write.sink() instanceof KplexTable)) return plan;
    LogicalPlan query = write.inputQuery();
    Positioned found = source(query);
    if (found == null) return plan;
    List<Attribute> output = Scala.asJava(query.output());
    int order;
    try {
      order = WriteSchema.orderColumn(query.schema());
    } catch (RuntimeException e) {
      return plan;  // the write reports what is wrong with its columns
    }
    Attribute orderColumn = output.get(order);
    List<NamedExpression> columns = new ArrayList<>(output);
    columns.add(alias(found.partition, 0));
    columns.add(alias(found.offset, 1, rowsMeta(new MetadataBuilder(), found).build()));
    columns.add(alias(found.timestamp, 2));
    columns.add(alias(found.ordered, 3));
    Expression high = new ApplyFunctionExpression(new HighBefore(orderColumn.dataType()),
        seq(List.of(orderColumn, found.ordered, found.offset)));
    columns.add(alias(high, 4));
    return io.kplex.spark.compat.Copies.with(write, "inputQuery", new Project(seq(columns), found.plan));
  }

  /** A batch INSERT into a kplex table, with its source positions when its rows come from a kplex table. */
  private static LogicalPlan insert(AppendData append) {
    if (!(append.table() instanceof DataSourceV2Relation target)) return append;
    org.apache.spark.sql.connector.catalog.Table written = target.table();
    // CREATE TABLE ... AS SELECT writes the table the catalog staged for it.
    if (written instanceof io.kplex.spark.catalog.StagedKplexTable staged) written = staged.table();
    if (!(written instanceof KplexTable table) || table.definition().isEmpty()) {
      return append;
    }
    if (append.query().resolved()) requireLateTopicNotRead(table, Scala.asJava(append.writeOptions()), append.query());
    Positioned found = source(append.query());
    if (found == null) return append;
    List<NamedExpression> columns = new ArrayList<>(Scala.asJava(append.query().output()));
    columns.add(alias(found.partition, 0, null));
    MetadataBuilder offsetMeta = new MetadataBuilder().putString(WriteSchema.SOURCE_TOPIC, found.topic);
    if (found.bootstrap != null) offsetMeta.putString(WriteSchema.SOURCE_BOOTSTRAP, found.bootstrap);
    if (found.cluster != null) offsetMeta.putString(WriteSchema.SOURCE_CLUSTER, found.cluster);
    columns.add(alias(found.offset, 1, rowsMeta(offsetMeta, found).build()));
    return append.withNewChildren(seq(List.of(new Project(seq(columns), found.plan))));
  }

  /**
   * Refuses a batch write into {@code table} whose late records ({@code late_policy =
   * side_topic}) would go to a topic its query reads: appended to its source, they would be
   * read again by the next such INSERT, judged late again and sent again. (A stream's write
   * checks the same against what its source reads: {@link io.kplex.spark.stream.QuerySinks#reads}.)
   * Options the write cannot read are left to the write to name.
   */
  private static void requireLateTopicNotRead(KplexTable table, java.util.Map<String, String> options,
      LogicalPlan query) {
    io.kplex.spark.conf.WriteConf conf;
    try {
      conf = new io.kplex.spark.conf.WriteConf(table.definition().get(), table.catalogOptions(), options,
          io.kplex.spark.conf.WriteConf.sessionSettings());
    } catch (RuntimeException e) {
      return;
    }
    if (conf.latePolicy != io.kplex.spark.conf.LatePolicy.SIDE_TOPIC) return;
    if (readTopics(query).contains(conf.lateTopic)) {
      throw io.kplex.spark.errors.Errors.lateTopicIsSource(conf.table, conf.lateTopic);
    }
  }

  /** The topics the kplex relations of {@code plan} read (a read-time table's: its sources). */
  private static java.util.Set<String> readTopics(LogicalPlan plan) {
    java.util.Set<String> topics = new java.util.TreeSet<>();
    java.util.ArrayDeque<LogicalPlan> todo = new java.util.ArrayDeque<>(List.of(plan));
    while (!todo.isEmpty()) {
      LogicalPlan p = todo.pop();
      org.apache.spark.sql.connector.catalog.Table t = p instanceof DataSourceV2Relation r ? r.table()
          : p instanceof StreamingRelationV2 r ? r.table() : null;
      if (t instanceof KplexTable kplex) topics.addAll(kplex.readTopics());
      todo.addAll(Scala.asJava(p.children()));
    }
    return topics;
  }

  /**
   * The kplex source a write's resolved query reads through projections and filters, or null:
   * none, not resolved yet, or positioned already (the rule ran on it).
   */
  private static Positioned source(LogicalPlan query) {
    if (!query.resolved()) return null;
    for (Attribute a : Scala.asJava(query.output())) if (WriteSchema.POSITION_COLUMNS.contains(a.name())) return null;
    return positioned(query);
  }

  /** The digest of the filters the source's rows went through, on the offset column (none without a filter). */
  private static MetadataBuilder rowsMeta(MetadataBuilder meta, Positioned found) {
    String digest = found.rows.digest();
    return digest == null ? meta : meta.putString(WriteSchema.SOURCE_ROWS, digest);
  }

  private static NamedExpression alias(Expression e, int column) {
    return alias(e, column, null);
  }

  /** {@code metadata}: the column's (null: none). */
  private static NamedExpression alias(Expression e, int column, Metadata metadata) {
    String name = WriteSchema.POSITION_COLUMNS.get(column);
    return new Alias(e, name, org.apache.spark.sql.catalyst.expressions.NamedExpression$.MODULE$.newExprId(),
        seq(List.of()), Option.apply(metadata), seq(List.of()));
  }

  private static Positioned positioned(LogicalPlan p) {
    if (p instanceof StreamingRelationV2 r) {
      return r.table() instanceof KplexTable t && !readTime(t) ? leaf(r, t, null) : null;
    }
    if (p instanceof DataSourceV2Relation r) {
      return r.table() instanceof KplexTable t && !readTime(t) ? leaf(r, t, r.options()) : null;
    }
    if (p instanceof Project project) {
      Positioned child = positioned(project.child());
      if (child == null) return null;
      List<NamedExpression> list = new ArrayList<>(Scala.asJava(project.projectList()));
      list.add(child.partition);
      list.add(child.offset);
      list.add(child.timestamp);
      if (child.ordered != child.partition) list.add(child.ordered);
      return new Positioned(new Project(seq(list), child.plan), child.partition, child.offset, child.timestamp,
          child.ordered, child.topic, child.bootstrap, child.cluster, child.rows.projected(project));
    }
    if (p instanceof Filter || p instanceof SubqueryAlias) {
      Positioned child = positioned(p.children().head());
      if (child == null) return null;
      Rows rows = p instanceof Filter filter ? child.rows.filtered(filter.condition(), child.partition, child.offset)
          : child.rows;
      return new Positioned(p.withNewChildren(seq(List.of(child.plan))), child.partition, child.offset,
          child.timestamp, child.ordered, child.topic, child.bootstrap, child.cluster, rows);
    }
    return null;
  }

  /** A read-time table: its rows come from several topics, so a (partition, offset) alone names none. */
  private static boolean readTime(KplexTable table) {
    return table.definition().map(d -> d.isReadTime()).orElse(false);
  }

  /** A source relation of kplex's, with its position columns (null if it lacks one). */
  private static Positioned leaf(LogicalPlan relation, KplexTable table, java.util.Map<String, String> readOptions) {
    Attribute partition = null, offset = null, timestamp = null, vpartition = null;
    for (Attribute a : Scala.asJava(relation.output())) {
      switch (a.name()) {
        case "partition" -> partition = a;
        case "vpartition" -> vpartition = a;
        case "offset" -> offset = a;
        case "timestamp" -> timestamp = a;
        default -> { }
      }
    }
    // A kplex table is in order per virtual partition (its physical ones interleave them).
    return partition == null || offset == null || timestamp == null ? null
        : new Positioned(relation, partition, offset, timestamp, vpartition != null ? vpartition : partition,
            table.topic(), readOptions == null ? null : committedBootstrap(table, readOptions),
            readOptions == null ? null : bootstrap(table, readOptions), readOptions == null ? Rows.STREAMED : Rows.ALL);
  }

  /** The bootstrap servers {@code table} is read through with these read options, or null (none given, or bad). */
  private static String bootstrap(KplexTable table, java.util.Map<String, String> readOptions) {
    try {
      return io.kplex.spark.kafka.KafkaConf.from(table.catalogOptions(), readOptions).bootstrap();
    } catch (RuntimeException e) {
      return null;
    }
  }

  /**
   * The bootstrap servers {@code table} is read through with these read options, where the read
   * sees committed records only (the write joins its reads across gaps a read_committed
   * consumer finds empty: write/EmptyGaps); else, or if its settings give none, null.
   */
  private static String committedBootstrap(KplexTable table, java.util.Map<String, String> readOptions) {
    try {
      io.kplex.spark.kafka.KafkaConf kafka = io.kplex.spark.kafka.KafkaConf.from(table.catalogOptions(), readOptions);
      return kafka.isolation() == org.apache.kafka.common.IsolationLevel.READ_COMMITTED ? kafka.bootstrap() : null;
    } catch (RuntimeException e) {
      return null;
    }
  }

  private static <T> Seq<T> seq(List<T> list) {
    return Scala.list(list);
  }
}
