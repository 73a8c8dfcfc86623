"""bench/jit_summary.py: each compiled method lands in the area of the code it belongs to, and a
real JVM's recording, made with the settings the tool writes, holds the C2 compilation of a method
made hot, inside the window it ran in and not outside it."""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

from jit_summary import OTHER, area, read_compilations, report, write_settings  # noqa: E402


@pytest.mark.parametrize("class_name, expected", [
    # kplex ships Kafka's clients shaded under its own package: they are Kafka's, not kplex's.
    ("io.kplex.shaded.org.apache.kafka.clients.producer.internals.RecordAccumulator",
     "Kafka's clients (producer, consumer, records)"),
    ("io.kplex.spark.write.KplexDataWriter", "kplex"),
    ("org.apache.spark.sql.catalyst.expressions.GeneratedClass$GeneratedIteratorForCodegenStage1",
     "Spark's generated code"),
    ("org.apache.spark.sql.catalyst.expressions.ApplyFunctionExpression",
     "Spark's expressions outside generated code"),
    ("org.apache.spark.util.collection.TimSort$SortState", "Spark's sort"),
    ("net.jpountz.lz4.LZ4BlockInputStream", "Spark's shuffle (serializer, files, lz4)"),
    ("org.codehaus.janino.Parser", "planning, Janino, class loading and task set-up"),
    ("org.apache.spark.sql.catalyst.trees.TreeNode", "planning, Janino, class loading and task set-up"),
    ("java.util.HashMap", OTHER),
])
def test_a_method_lands_in_the_area_of_its_code(class_name, expected):
    assert area(class_name) == expected


HOT = """
public class Hot {
  static long work(long x) { long y = x; for (int i = 0; i < 50; i++) y = y * 31 + (y >>> 7) + i; return y; }
  public static void main(String[] a) {
    long s = 0;
    for (long i = 0; i < 20_000_000L; i++) s += work(i);
    System.out.println(s);
  }
}
"""


def test_a_real_recording_holds_the_c2_compilation_of_a_hot_method_inside_its_window(tmp_path):
    settings = tmp_path / "compilations.jfc"
    write_settings(settings)
    assert '<setting name="threshold" control="compiler-compilation-threshold">0 ms</setting>' in settings.read_text()
    source = tmp_path / "Hot.java"
    source.write_text(HOT)
    recording = tmp_path / "hot.jfr"
    started = time.time()
    subprocess.run(["java", f"-XX:StartFlightRecording=settings={settings},filename={recording}", str(source)],
                   check=True, capture_output=True, timeout=120)
    ended = time.time()

    everything = read_compilations(recording)
    hot = [c for c in everything if c.method == "Hot.work"]
    assert any(c.tier == 4 for c in hot), f"Hot.work was never compiled by C2: {hot}"
    # The JDK's default settings (a 1 s threshold) would record none of these short tasks.
    assert len(everything) > 100
    assert all(started <= c.epoch <= ended for c in everything)

    inside = read_compilations(recording, (started, ended))
    assert {c.method for c in inside} == {c.method for c in everything}
    assert read_compilations(recording, (started - 3600, started - 1800)) == []

    # The source launcher's javac is compiled too, and takes C2 longer than Hot.work does.
    assert "| Hot.work |" in report(everything, top=len(everything))
    assert report([]).startswith("no compilations in the window")
