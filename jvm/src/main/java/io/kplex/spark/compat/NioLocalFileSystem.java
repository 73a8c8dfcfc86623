package io.kplex.spark.compat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;
import java.util.Set;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.permission.FsAction;
import org.apache.hadoop.fs.permission.FsPermission;

/**
 * Hadoop's local file system ({@code file:}), which sets a file's permissions through
 * {@code java.nio} instead of a {@code chmod} process. A pip-installed Spark has no native
 * Hadoop library, so Hadoop's own forks {@code chmod} for every file and folder it creates:
 * a streaming query's offsets and commit entries took 4 processes a micro-batch, about
 * 27 ms of each on 2 cores (docs/performance.md). The permission set is the same; a sticky
 * bit, or a file system without POSIX permissions, goes to Hadoop's own way.
 *
 * <p>A streaming query's checkpoint on a local master is written through it by kplex's
 * checkpoint manager ({@code LocalCheckpointFiles}, one per Spark line), which
 * {@code configure_spark_with_kplex} names; {@link #configured} gives it its Hadoop settings.
 * It is not the session's {@code fs.file.impl}: {@code spark-submit} resolves the session's
 * jars through the file system before kplex's jar is on its class path.
 */
public final class NioLocalFileSystem extends LocalFileSystem {
  public NioLocalFileSystem() {
    super(new Raw());
  }

  /**
   * {@code conf}, or, when {@code path} is on the local file system, a copy of it that makes
   * {@code path.getFileSystem} a new instance of this class (not the JVM's cached one).
   */
  public static org.apache.hadoop.conf.Configuration configured(Path path, org.apache.hadoop.conf.Configuration conf) {
    java.net.URI uri = path.toUri();
    String scheme = uri.getScheme() != null ? uri.getScheme()
        : org.apache.hadoop.fs.FileSystem.getDefaultUri(conf).getScheme();
    if (!"file".equals(scheme)) return conf;
    org.apache.hadoop.conf.Configuration out = new org.apache.hadoop.conf.Configuration(conf);
    out.setClassLoader(NioLocalFileSystem.class.getClassLoader());
    out.set("fs.file.impl", NioLocalFileSystem.class.getName());
    out.setBoolean("fs.file.impl.disable.cache", true);
    return out;
  }

  /** The raw file system under the checksums, where permissions are set. */
  static final class Raw extends RawLocalFileSystem {
    @Override
    public void setPermission(Path p, FsPermission permission) throws IOException {
      Set<PosixFilePermission> posix = posix(permission);
      if (posix == null) {
        super.setPermission(p, permission);
        return;
      }
      try {
        Files.setPosixFilePermissions(pathToFile(p).toPath(), posix);
      } catch (UnsupportedOperationException notPosix) {
        super.setPermission(p, permission);
      }
    }
  }

  /** {@code permission} as java.nio's, or null when it has a sticky bit (java.nio has none). */
  static Set<PosixFilePermission> posix(FsPermission permission) {
    if (permission.getStickyBit()) return null;
    Set<PosixFilePermission> out = EnumSet.noneOf(PosixFilePermission.class);
    add(out, permission.getUserAction(),
        PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE, PosixFilePermission.OWNER_EXECUTE);
    add(out, permission.getGroupAction(),
        PosixFilePermission.GROUP_READ, PosixFilePermission.GROUP_WRITE, PosixFilePermission.GROUP_EXECUTE);
    add(out, permission.getOtherAction(),
        PosixFilePermission.OTHERS_READ, PosixFilePermission.OTHERS_WRITE, PosixFilePermission.OTHERS_EXECUTE);
    return out;
  }

  private static void add(Set<PosixFilePermission> out, FsAction action, PosixFilePermission read,
      PosixFilePermission write, PosixFilePermission execute) {
    if (action.implies(FsAction.READ)) out.add(read);
    if (action.implies(FsAction.WRITE)) out.add(write);
    if (action.implies(FsAction.EXECUTE)) out.add(execute);
  }
}
