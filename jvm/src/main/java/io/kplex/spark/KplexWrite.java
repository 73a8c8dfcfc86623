package io.kplex.spark;

import org.apache.spark.sql.connector.distributions.Distribution;
import org.apache.spark.sql.connector.expressions.SortOrder;
import org.apache.spark.sql.connector.write.BatchWrite;
import org.apache.spark.sql.connector.write.RequiresDistributionAndOrdering;
import org.apache.spark.sql.types.BinaryType;

/** A planned kplex write: its requirements on Spark, and the batch write that runs it. */
final class KplexWrite implements RequiresDistributionAndOrdering {
  private final WriteConf conf;
  private final WriteSchema schema;
  private final String queryId;
  private final WriteRequirements requirements;

  KplexWrite(WriteConf conf, WriteSchema schema, String queryId) {
    this.conf = conf;
    this.schema = schema;
    this.queryId = queryId;
    this.requirements = WriteRequirements.of(schema.name(schema.key),
        schema.type(schema.key) instanceof BinaryType, schema.name(schema.order),
        schema.name(schema.value), conf.virtualPartitions, conf.nullKey, conf.nullOrder);
  }

  @Override public Distribution requiredDistribution() { return requirements.distribution; }
  @Override public boolean distributionStrictlyRequired() { return true; }
  @Override public SortOrder[] requiredOrdering() { return requirements.ordering; }

  @Override
  public BatchWrite toBatch() {
    return new KplexBatchWrite(conf, schema, queryId);
  }

  @Override
  public String description() {
    return "kplex " + conf + " [" + schema + "]";
  }

  @Override
  public String toString() {
    return description();
  }
}
