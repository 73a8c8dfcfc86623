package io.kplex.spark.compat;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.assertTrue;

import java.nio.file.Files;
import java.nio.file.attribute.PosixFilePermissions;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.permission.FsPermission;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

public class NioLocalFileSystemTest {
  @Rule
  public TemporaryFolder dir = new TemporaryFolder();

  @Test
  public void aPermissionIsJavaNiosSameBitsAndAStickyBitIsLeftToHadoop() {
    assertEquals(PosixFilePermissions.fromString("rwxr-x---"), NioLocalFileSystem.posix(new FsPermission((short) 0750)));
    assertEquals(PosixFilePermissions.fromString("rw-r--r--"), NioLocalFileSystem.posix(new FsPermission((short) 0644)));
    assertEquals(PosixFilePermissions.fromString("-w---x-wx"), NioLocalFileSystem.posix(new FsPermission((short) 0213)));
    assertNull(NioLocalFileSystem.posix(new FsPermission((short) 01777)));
  }

  @Test
  public void localPathsGetANewInstanceOfItAndOtherSchemesKeepTheirSettings() throws Exception {
    Configuration conf = new Configuration(false);
    Path local = new Path(dir.getRoot().toURI().toString(), "a");
    Configuration configured = NioLocalFileSystem.configured(local, conf);
    try (FileSystem fs = local.getFileSystem(configured)) {
      assertEquals(NioLocalFileSystem.class, fs.getClass());
      fs.mkdirs(local, new FsPermission((short) 0750));
      try (FSDataOutputStream out = fs.create(new Path(local, "f"), true)) {
        out.write(1);
      }
      fs.setPermission(new Path(local, "f"), new FsPermission((short) 0640));
    }
    java.nio.file.Path a = dir.getRoot().toPath().resolve("a");
    assertEquals(PosixFilePermissions.fromString("rwxr-x---"), Files.getPosixFilePermissions(a));
    assertEquals(PosixFilePermissions.fromString("rw-r-----"), Files.getPosixFilePermissions(a.resolve("f")));
    assertTrue(Files.exists(a.resolve(".f.crc")));
    assertSame(conf, NioLocalFileSystem.configured(new Path("hdfs://namenode:8020/chk"), conf));
  }
}
