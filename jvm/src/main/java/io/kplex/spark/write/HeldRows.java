package io.kplex.spark.write;

import io.kplex.spark.errors.Errors;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.Serializable;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;

/**
 * The records a streaming write holds back until the event-time watermark passes them,
 * as files in the query's checkpoint ({@code <checkpoint>/kplex/held/<epoch>/part-<p>-<task>}),
 * in Spark's own binary row format, read through Hadoop's file system (local, HDFS, S3...).
 * A file is written by a task of epoch E and named in E's {@link io.kplex.spark.txn.EpochMark}
 * only once E is committed, so a rerun of E rereads exactly what E-1 left: deterministic on
 * replay, with no state store.
 */
final class HeldRows implements Serializable {
  private static final int MAGIC = 0x4b504831;  // "KPH1"

  /** The Hadoop configuration of the session, shipped as bytes (Configuration is Writable). */
  private final byte[] hadoopConf;
  private static final int MAX_CONFS = 16;
  /**
   * Configurations read back, by their bytes: each JVM reads a session's once, not once per
   * task. Kept per JVM, not per query: an executor has no object of a query that outlives a
   * task (Spark ships the writer factory, and this with it, to every task afresh). Bounded:
   * the configurations used last, one per session whose queries ran here (in practice one).
   */
  private static final Map<ByteBuffer, Configuration> CONFS = Collections.synchronizedMap(
      new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<ByteBuffer, Configuration> eldest) {
          return size() > MAX_CONFS;
        }
      });
  final String dir;

  HeldRows(Configuration conf, String dir) {
    this.dir = dir;
    this.hadoopConf = shipped(conf);
  }

  /** A configuration's bytes as last written, and a fingerprint of its entries then. */
  private record Shipped(long fingerprint, byte[] bytes) {}

  /**
   * The bytes of each session configuration written on this driver (by identity: Configuration
   * has no equals). A streaming write is planned again every micro-batch, and writing a
   * Configuration (about a thousand entries, compressed) took some 10 ms each time; it is
   * written again only when an entry was set, changed or removed since.
   */
  private static final Map<Configuration, Shipped> SHIPPED = Collections.synchronizedMap(new java.util.WeakHashMap<>());

  static byte[] shipped(Configuration conf) {
    long fingerprint = fingerprint(conf);
    Shipped before = SHIPPED.get(conf);
    if (before != null && before.fingerprint == fingerprint) return before.bytes;
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (DataOutputStream out = new DataOutputStream(bytes)) {
      conf.write(out);
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
    byte[] out = bytes.toByteArray();
    SHIPPED.put(conf, new Shipped(fingerprint, out));
    return out;
  }

  /** Every entry of {@code conf} mixed into 64 bits, in no particular order. */
  static long fingerprint(Configuration conf) {
    long sum = 0;
    long count = 0;
    for (Map.Entry<String, String> e : conf) {
      long h = ((long) e.getKey().hashCode() << 32) ^ (e.getValue() == null ? 0 : e.getValue().hashCode() & 0xffffffffL);
      h *= 0x9E3779B97F4A7C15L;
      sum += h ^ (h >>> 29);
      count++;
    }
    return sum * 31 + count;
  }

  /**
   * The file system of a held file. On a local disk, the raw one: Hadoop's checksummed local
   * file system writes a {@code .crc} beside each file and forks a {@code chmod} process for
   * each file and folder it creates (no native library in a pip-installed Spark), five forks a
   * micro-batch, a few milliseconds each on busy cores. A held file needs neither: it is
   * written once, read back by the same query, and its footer marks a complete file.
   */
  private FileSystem fs(Path path) throws IOException {
    FileSystem fs = path.getFileSystem(conf());
    return fs instanceof org.apache.hadoop.fs.LocalFileSystem local ? local.getRawFileSystem() : fs;
  }

  /** A new file (replacing one of that name), without a chmod on a local disk ({@link #fs}). */
  private FSDataOutputStream create(Path path) throws IOException {
    FileSystem fs = fs(path);
    if (fs instanceof org.apache.hadoop.fs.RawLocalFileSystem local) {
      // Hadoop's local create always sets a permission (a chmod process); a plain file gets
      // the process's umask, as the checkpoint folder's other files do.
      java.io.File file = local.pathToFile(path);
      java.io.File folder = file.getParentFile();
      if (folder != null && !folder.isDirectory() && !folder.mkdirs() && !folder.isDirectory()) {
        throw new IOException("cannot create the folder " + folder);
      }
      return new FSDataOutputStream(new java.io.BufferedOutputStream(new java.io.FileOutputStream(file), 1 << 16),
          null);
    }
    return fs.create(path, true);
  }

  private Configuration conf() throws IOException {
    ByteBuffer key = ByteBuffer.wrap(hadoopConf);
    Configuration c = CONFS.get(key);
    if (c == null) {
      c = new Configuration(false);
      c.readFields(new DataInputStream(new ByteArrayInputStream(hadoopConf)));
      CONFS.put(key, c);
    }
    return c;
  }

  /**
   * The file of a task's held-back records: {@code part-<task>-of-<tasks>-<task id>}, so that
   * in the next epoch, with as many tasks, each task reads only the file of its own
   * virtual partitions.
   */
  String path(long epoch, int partitionId, int numPartitions, long taskId) {
    return dir + "/held/" + epoch + "/part-" + partitionId + "-of-" + numPartitions + "-" + taskId;
  }

  /**
   * {task, tasks} of a file named by {@link #path}, or null for another name (an older
   * checkpoint's {@code part-<task>-<task id>}: its rows are then sorted out row by row).
   */
  static int[] writtenBy(String file) {
    String name = file.substring(file.lastIndexOf('/') + 1);
    String[] parts = name.split("-");
    if (parts.length != 5 || !parts[0].equals("part") || !parts[2].equals("of")) return null;
    try {
      return new int[] {Integer.parseInt(parts[1]), Integer.parseInt(parts[3])};
    } catch (NumberFormatException e) {
      return null;
    }
  }

  /**
   * A held file as an epoch mark names it: its path, and, for a file left in place across
   * micro-batches, where its rows still held begin ({@code <path>#<byte offset>+<rows>}).
   * A file of an older kplex, or one named without a position, is read whole.
   */
  record Ref(String file, long position, long rows) {
    private static final java.util.regex.Pattern AT = java.util.regex.Pattern.compile("(.*)#(\\d+)\\+(\\d+)");

    static Ref parse(String named) {
      java.util.regex.Matcher m = AT.matcher(named);
      return m.matches() ? new Ref(m.group(1), Long.parseLong(m.group(2)), Long.parseLong(m.group(3)))
          : new Ref(named, -1, -1);
    }

    /** Whether it says where its held rows begin and how many they are (then it can be left in place). */
    boolean placed() {
      return position >= 0 && rows >= 0;
    }

    @Override
    public String toString() {
      return placed() ? file + "#" + position + "+" + rows : file;
    }
  }

  /** Where the first row of a held file begins: after its magic, its column count and its row count. */
  static final long FIRST_ROW = 12;

  /**
   * A held file as an epoch mark names it: relative to this folder (the query's checkpoint's
   * {@code kplex}), so a checkpoint that is moved or copied restarts.
   */
  String relative(String file) {
    String prefix = dir + "/";
    return file.startsWith(prefix) ? file.substring(prefix.length()) : file;
  }

  /** The path of a held file an epoch mark names (relative, or, as older marks named it, absolute). */
  String resolve(String file) {
    return absolute(file) ? file : dir + "/" + file;
  }

  /**
   * Whether a held file's name is a full path: another query's file taken over when resuming
   * from the table, or as older marks named them; relative ones are this query's own.
   */
  static boolean absolute(String file) {
    return file.startsWith("/") || file.contains("://") || file.matches("^[A-Za-z]+:.*");
  }

  /** The folder held files are named relative to, qualified (scheme and absolute path), for the epoch marks. */
  String base() {
    try {
      Path path = new Path(dir);
      return path.getFileSystem(conf()).makeQualified(path).toString();
    } catch (IOException e) {
      return dir;
    }
  }

  /** Whether a held file (by full path) is there: one another query's mark names, before taking it over. */
  boolean exists(String file) {
    try {
      Path path = new Path(file);
      return fs(path).exists(path);
    } catch (IOException e) {
      throw Errors.heldRead(file, e);
    }
  }

  /** The last four bytes of a held file with a footer ("KPF1"). */
  private static final int FOOTER = 0x4b504631;

  /** A count in a file's header that says: rows follow until a length of {@link #END}. */
  private static final int STREAMED = -1;
  private static final int END = -1;

  void write(String file, int numFields, List<UnsafeRow> rows) {
    try (Writer out = writer(file, numFields)) {
      for (UnsafeRow row : rows) out.add(row);
    }
  }

  /**
   * A held file written row by row, as the records come: its rows are never all in memory.
   * The header counts none ({@link #STREAMED}); a length of {@link #END} ends the rows.
   */
  Writer writer(String file, int numFields) {
    try {
      Path path = new Path(file);
      FSDataOutputStream out = create(path);
      out.writeInt(MAGIC);
      out.writeInt(numFields);
      out.writeInt(STREAMED);
      return new Writer(file, out);
    } catch (IOException e) {
      throw Errors.heldWrite(file, e);
    }
  }

  /** See {@link #writer}. */
  static final class Writer implements AutoCloseable {
    private final String file;
    private final java.io.DataOutputStream out;
    private final byte[] buffer = new byte[4096];
    private long rows;
    /**
     * Per source partition, the smallest offset of a row written, kept in the file's footer
     * ({@link #heldFrom}): what the monitoring group is not committed past while any of it is held.
     */
    private final Map<Integer, Long> from = new java.util.TreeMap<>();

    Writer(String file, java.io.DataOutputStream out) {
      this.file = file;
      this.out = out;
    }

    void add(UnsafeRow row) {
      try {
        out.writeInt(row.getSizeInBytes());
        row.writeToStream(out, buffer);
        rows++;
      } catch (IOException e) {
        throw Errors.heldWrite(file, e);
      }
    }

    /** {@link #add}, for a row from {@code offset} of its source {@code partition}. */
    void add(UnsafeRow row, int partition, long offset) {
      add(row);
      from.merge(partition, offset, Math::min);
    }

    long rows() {
      return rows;
    }

    Map<Integer, Long> from() {
      return from;
    }

    /**
     * Ends the rows, then the footer: the smallest source offsets, where it starts (a long)
     * and {@link #FOOTER}, so that it is found from the file's end.
     */
    @Override
    public void close() {
      try {
        out.writeInt(END);
        long footer = out.size() & 0xffffffffL;
        if (out instanceof FSDataOutputStream) footer = ((FSDataOutputStream) out).getPos();
        out.writeInt(from.size());
        for (Map.Entry<Integer, Long> e : from.entrySet()) {
          out.writeInt(e.getKey());
          out.writeLong(e.getValue());
        }
        out.writeLong(footer);
        out.writeInt(FOOTER);
        out.close();
      } catch (IOException e) {
        throw Errors.heldWrite(file, e);
      }
    }
  }

  List<UnsafeRow> read(String file, int numFields) {
    List<UnsafeRow> rows = new ArrayList<>();
    try (Reader in = open(file, numFields)) {
      while (in.hasNext()) rows.add(in.next());
    }
    return rows;
  }

  /** A held file's rows, read one at a time (a file of an older kplex, with its count, too). */
  Reader open(String file, int numFields) {
    return open(file, numFields, FIRST_ROW);
  }

  /** A held file's rows from byte {@code position} on (a row's start, as {@link Reader#position} gave it). */
  Reader open(String file, int numFields, long position) {
    try {
      Path path = new Path(file);
      org.apache.hadoop.fs.FSDataInputStream raw = fs(path).open(path);
      if (raw.readInt() != MAGIC) {
        raw.close();
        throw new IOException("not a kplex held-records file");
      }
      int fields = raw.readInt();
      if (fields != numFields) {
        raw.close();
        throw Errors.heldColumns(file, fields, numFields);
      }
      int count = raw.readInt();
      if (position > FIRST_ROW) {
        if (count != STREAMED) {
          raw.close();
          throw new IOException("a held file of an older kplex is read from its start, not from byte " + position);
        }
        raw.seek(position);
      }
      DataInputStream in = new DataInputStream(new java.io.BufferedInputStream(raw, 1 << 16));
      return new Reader(file, in, numFields, count, Math.max(position, FIRST_ROW));
    } catch (IOException e) {
      throw Errors.heldRead(file, e);
    }
  }

  /**
   * The smallest source offset per partition among a held file's rows, from its footer (all
   * its rows: at most the smallest of those still held), or null when it has none (a file of
   * an older kplex).
   */
  Map<Integer, Long> heldFrom(String file) {
    try {
      Path path = new Path(file);
      FileSystem fs = fs(path);
      long length = fs.getFileStatus(path).getLen();
      if (length < FIRST_ROW + 4 + 4 + 8 + 4) return null;
      try (org.apache.hadoop.fs.FSDataInputStream in = fs.open(path)) {
        in.seek(length - 12);
        long footer = in.readLong();
        if (in.readInt() != FOOTER || footer < FIRST_ROW || footer > length - 16) return null;
        in.seek(footer);
        int n = in.readInt();
        Map<Integer, Long> from = new java.util.TreeMap<>();
        for (int i = 0; i < n; i++) from.put(in.readInt(), in.readLong());
        return from;
      }
    } catch (IOException e) {
      throw Errors.heldRead(file, e);
    }
  }

  /** See {@link #open}. */
  static final class Reader implements java.util.Iterator<UnsafeRow>, AutoCloseable {
    private final String file;
    private final DataInputStream in;
    private final int numFields;
    /** Rows left by the header's count, or {@link #STREAMED}. */
    private long left;
    private UnsafeRow next;
    /** The byte where the next row begins in the file, and where the one after it begins. */
    private long position;
    private long after;

    Reader(String file, DataInputStream in, int numFields, int count) {
      this(file, in, numFields, count, FIRST_ROW);
    }

    Reader(String file, DataInputStream in, int numFields, int count, long position) {
      this.file = file;
      this.in = in;
      this.numFields = numFields;
      this.left = count;
      this.after = position;
      advance();
    }

    /** Where the row {@link #next} returns next begins in the file (to reopen it there). */
    long position() {
      return position;
    }

    private void advance() {
      try {
        next = null;
        position = after;
        if (left == 0) return;
        int size = in.readInt();
        if (size == END && left == STREAMED) return;
        after += 4L + size;
        byte[] b = new byte[size];
        in.readFully(b);
        UnsafeRow row = new UnsafeRow(numFields);
        row.pointTo(b, b.length);
        next = row;
        if (left > 0) left--;
      } catch (IOException e) {
        throw Errors.heldRead(file, e);
      }
    }

    @Override
    public boolean hasNext() {
      return next != null;
    }

    @Override
    public UnsafeRow next() {
      if (next == null) throw new java.util.NoSuchElementException(file);
      UnsafeRow row = next;
      advance();
      return row;
    }

    @Override
    public void close() {
      try {
        in.close();
      } catch (IOException e) {
        // read to its end or abandoned: nothing to lose
      }
    }
  }

  /** One thread per driver JVM removes old held files, off the query's thread. */
  private static final ExecutorService CLEANER = Executors.newSingleThreadExecutor(r -> {
    Thread t = new Thread(r, "kplex-held-clean");
    t.setDaemon(true);
    return t;
  });

  /**
   * Records, in the checkpoint ({@code <checkpoint>/kplex/expired/<epoch>}), that epoch
   * {@code epoch} failed because its write outlived {@code timeoutMs} (transaction.timeout.ms):
   * Spark reruns a planned micro-batch with the same offsets after a restart, and its rerun
   * needs more time, not the same ({@link #expiredAfter}). Best effort: a rerun without it
   * only fails the same way again.
   */
  void expired(long epoch, long timeoutMs) {
    try {
      Path path = new Path(dir + "/expired/" + epoch);
      try (FSDataOutputStream out = create(path)) {
        out.write(Long.toString(timeoutMs).getBytes(java.nio.charset.StandardCharsets.UTF_8));
      }
    } catch (IOException e) {
      // the rerun then uses the same timeout
    }
  }

  /** The transaction timeout epoch {@code epoch} expired after in an earlier run, or -1 (it did not). */
  long expiredAfter(long epoch) {
    try {
      Path path = new Path(dir + "/expired/" + epoch);
      FileSystem fs = fs(path);
      if (!fs.exists(path)) return -1;
      try (java.io.InputStream in = fs.open(path)) {
        return Long.parseLong(new String(in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8).trim());
      }
    } catch (IOException | NumberFormatException e) {
      return -1;
    }
  }

  /**
   * Removes the held files of epochs before {@code epoch} that its mark does not name
   * ({@code named}: a file left in place stays), in the background (best effort: nothing
   * reads them again).
   */
  void clean(long epoch, List<String> named) {
    CLEANER.execute(() -> cleanNow(epoch, named));
  }

  /** {@link #clean}, now. */
  void cleanNow(long epoch, List<String> named) {
    java.util.Set<String> keep = new java.util.HashSet<>();
    for (String n : named) keep.add(new Path(resolve(Ref.parse(n).file())).toUri().getPath());
    try {
      Path root = new Path(dir + "/held");
      FileSystem fs = fs(root);
      if (!fs.exists(root)) return;
      for (org.apache.hadoop.fs.FileStatus s : fs.listStatus(root)) {
        try {
          if (Long.parseLong(s.getPath().getName()) >= epoch) continue;
        } catch (NumberFormatException e) {
          continue;  // not ours
        }
        boolean kept = false;
        for (org.apache.hadoop.fs.FileStatus f : fs.listStatus(s.getPath())) {
          if (keep.contains(f.getPath().toUri().getPath())) {
            kept = true;
          } else {
            fs.delete(f.getPath(), false);
          }
        }
        if (!kept) fs.delete(s.getPath(), true);
      }
    } catch (IOException e) {
      // Old files only cost space; the next epoch tries again.
    }
  }
}
