"""bench/jfr_summary.py: each task-thread sample lands in the phase where its work is done,
by its stage first (a map task's or a writer task's), not where the stage's outer loop is.
Stacks are written innermost first, as ``jfr print`` gives them; nothing is run."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

from jfr_summary import Sample, phase, report  # noqa: E402

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
