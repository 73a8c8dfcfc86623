/**
 * What one process forked from a JVM costs, as Hadoop's local file system forks them without
 * its native library (docs/performance.md): {@code java -Xmx1g bench/ForkCost.java}.
 */
public final class ForkCost {
  public static void main(String[] args) throws Exception {
    byte[][] heap = new byte[400][];
    for (int i = 0; i < heap.length; i++) heap[i] = new byte[1 << 20];  // a driver's heap in use
    for (int round = 0; round < 3; round++) {
      long start = System.nanoTime();
      for (int i = 0; i < 50; i++) {
        Process p = new ProcessBuilder("readlink", "/tmp").start();
        p.getInputStream().readAllBytes();
        p.waitFor();
      }
      System.out.printf("%.2f ms a process (%d MB held)%n", (System.nanoTime() - start) / 50 / 1e6, heap.length);
    }
  }
}
