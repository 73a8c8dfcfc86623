package io.kplex.spark.compat;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager;

/**
 * Spark's checkpoint manager on Hadoop's FileSystem API, whose local files are written through
 * {@link NioLocalFileSystem} (no {@code chmod} process per file). Named by
 * {@code spark.sql.streaming.checkpointFileManagerClass} for a session on a local master
 * ({@code kplex.session.local_checkpoint_manager}), on Spark 4.1 and later (Spark 4.0 has this class in the package 3.5 has it in).
 */
public final class LocalCheckpointFiles extends FileSystemBasedCheckpointFileManager {
  public LocalCheckpointFiles(Path path, Configuration hadoopConf) {
    super(path, NioLocalFileSystem.configured(path, hadoopConf));
  }
}
