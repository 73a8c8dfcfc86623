"""bench/jfr_summary.py: each task-thread sample lands in the phase where its work is done,
by its stage first (a map task's or a writer task's), not where the stage's outer loop is.
Stacks are written innermost first, as ``jfr print`` gives them. Only the frame types' test runs
anything: a small Java program, recorded, to check the shape of ``jfr print --json``."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

from jfr_summary import Sample, count_top_frame_types, iso_epoch, phase, report, top_frame_types  # noqa: E402

MAP_TASK = ["org.apache.spark.shuffle.sort.BypassMergeSortShuffleWriter.write(Iterator)",
            "org.apache.spark.scheduler.ShuffleMapTask.runTask(TaskContext)",
            "java.lang.Thread.run()"]
GENERATED = "org.apache.spark.sql.catalyst.expressions.GeneratedClass$GeneratedIteratorForCodegenStage1.processNext()"
WRITE_TASK = ["org.apache.spark.sql.execution.datasources.v2.DataWritingSparkTask$.write(...)",
              "org.apache.spark.scheduler.ResultTask.runTask(TaskContext)", "java.lang.Thread.run()"]
SORT_INPUT = "org.apache.spark.sql.catalyst.expressions.GeneratedClass$GeneratedIteratorForCodegenStage2.sort_addToSorter_0$()"


@pytest.mark.parametrize("inner, stage, expected", [
    # kplex_json runs inside the map stage's generated code, under the shuffle writer's loop.
    (["io.kplex.spark.functions.JsonPointer.skipString(byte[], int, int)", GENERATED], MAP_TASK,
     "map: kplex_json"),
    # The source's decompression is the consumer's, not the shuffle's.
    (["liblz4-java.so.LZ4_decompress_safe()", "io.kplex.shaded.org.apache.kafka.clients.consumer.KafkaConsumer.poll(Duration)",
      "io.kplex.spark.read.KplexPartitionReader.next()", GENERATED], MAP_TASK,
     "map: kplex source read (consumer, decompression)"),
    (["liblz4-java.so.LZ4_compress_fast_extState()", "net.jpountz.lz4.LZ4BlockOutputStream.write(byte[], int, int)",
      "org.apache.spark.storage.DiskBlockObjectWriter.write(Object, Object)"], MAP_TASK,
     "map: shuffle write (serialize, checksum, compress, files)"),
    # The shuffle writer's own loop (partitioning each row) is the shuffle's; the code it pulls rows from is not.
    ([], MAP_TASK, "map: shuffle write (serialize, checksum, compress, files)"),
    ([GENERATED], MAP_TASK, "map: Spark's generated code, iterators, task set-up"),
    # Kafka's producer is called from kplex's writer: its samples are the producer's.
    (["io.kplex.shaded.org.apache.kafka.common.record.DefaultRecord.writeTo(...)",
      "io.kplex.shaded.org.apache.kafka.clients.producer.KafkaProducer.doSend(ProducerRecord, Callback)",
      "io.kplex.shaded.org.apache.kafka.clients.producer.KafkaProducer.send(ProducerRecord, Callback)",
      "io.kplex.spark.write.KplexDataWriter.write(InternalRow)"], WRITE_TASK, "write: Kafka producer send"),
    (["io.kplex.spark.write.RowCodec.value(InternalRow)", "io.kplex.spark.write.KplexDataWriter.write(InternalRow)"],
     WRITE_TASK, "write: kplex writer (key/vp/headers)"),
    # Reading the shuffle while the sort pulls its input is the shuffle read.
    (["java.io.BufferedInputStream.read()", "java.io.DataInputStream.readInt()",
      "org.apache.spark.sql.execution.UnsafeRowSerializerInstance$$anon$2$$anon$3.readSize()", SORT_INPUT],
     WRITE_TASK, "write: shuffle read (files, decompress, rows)"),
    (["org.apache.spark.util.collection.unsafe.sort.UnsafeSortDataFormat.getKey(...)",
      "org.apache.spark.util.collection.TimSort.sort(...)",
      "org.apache.spark.util.collection.unsafe.sort.UnsafeInMemorySorter.getSortedIterator()"],
     WRITE_TASK, "write: sort"),
    ([".Interpreter"], ["java.lang.Thread.run()"], "other: task set-up, class loading, stacks not walked"),
])
def test_a_sample_lands_in_the_phase_where_its_work_is_done(inner, stage, expected):
    assert phase(inner + stage) == expected


def test_the_report_counts_task_threads_by_phase_and_no_other_thread():
    task = "Executor task launch worker for task 0.0 in stage 2.0 (TID 7)"
    samples = [Sample(task, ["io.kplex.spark.functions.JsonPointer.skipString(byte[], int, int)", GENERATED] + MAP_TASK),
               Sample(task, ["io.kplex.spark.functions.JsonPointer.space(byte[], int, int)", GENERATED] + MAP_TASK),
               Sample(task, [GENERATED] + MAP_TASK),
               Sample("C2 CompilerThread0", ["libjvm.so.Compile::Compile()"])]
    text = report(samples)
    assert "| `map: kplex_json` | 2 | 66.7% |" in text
    assert "| `map: Spark's generated code, iterators, task set-up` | 1 | 33.3% |" in text
    assert "| `JIT compiler threads` | 1 | 25.0% |" in text


def _event(thread: str, when: str, kind: str) -> dict:
    return {"values": {"startTime": when, "sampledThread": {"javaName": thread},
                       "stackTrace": {"frames": [{"type": kind}]}}}


def test_frame_types_count_the_task_threads_in_the_window_only():
    task = "Executor task launch worker for task 3.0 in stage 1.0 (TID 4)"
    events = [_event(task, "2026-12-05T10:40:13.5Z", "Interpreted"),
              _event(task, "2026-12-05T11:40:14.25+01:00", "JIT compiled"),  # 10:40:14.25 UTC
              _event(task, "2026-12-05T10:40:20Z", "Inlined"),  # after the window
              _event("C2 CompilerThread0", "2026-12-05T10:40:14Z", "Native")]
    start = iso_epoch("2026-12-05T10:40:13Z")
    assert count_top_frame_types(events, (start, start + 2)) == {"Interpreted": 1, "JIT compiled": 1}
    assert sum(count_top_frame_types(events).values()) == 3
    assert iso_epoch("2026-12-05T10:40:13.123456789Z") - start == pytest.approx(0.123456789)


def test_frame_types_are_read_from_a_real_recording(tmp_path):
    # A thread named as Spark names its task threads spins for a second under the recorder.
    source = tmp_path / "Spin.java"
    source.write_text("""
public class Spin {
  public static void main(String[] args) throws Exception {
    Thread t = new Thread(() -> {
      long end = System.nanoTime() + 1_500_000_000L, x = 0;
      while (System.nanoTime() < end) { x += Long.toString(x).length(); }
      System.out.println(x);
    }, "Executor task launch worker for task 0.0 in stage 0.0 (TID 0)");
    t.start();
    t.join();
  }
}
""")
    recording = tmp_path / "spin.jfr"
    subprocess.run(["java", f"-XX:StartFlightRecording=filename={recording},settings=profile", str(source)],
                   check=True, capture_output=True, timeout=120)
    types = top_frame_types(recording)
    assert sum(types.values()) > 20, types
    assert set(types) <= {"Interpreted", "JIT compiled", "Inlined", "Native"}, types
    assert "### How the task threads' innermost frames ran" in report([], frame_types=types)
