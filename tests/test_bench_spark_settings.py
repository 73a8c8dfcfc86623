"""bench/spark_settings.py: its table of medians (nothing is run), each setting's INSERT and
whole process beside kplex's own, and the arguments it refuses."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

from spark_settings import KPLEX, Run, setting, split_setting, table, training  # noqa: E402


def test_the_table_puts_each_settings_medians_beside_kplexs_own():
    runs = {KPLEX: [Run(3.0, 8.0, 12.0), Run(3.2, 9.0, 13.0), Run(2.8, 10.0, 14.0)],
            # INSERT faster, the process not: the time moved to the JVM's start.
            "moved": [Run(4.0, 6.0, 13.0), Run(4.2, 7.0, 13.0), Run(3.8, 5.0, 13.0)]}
    text = table(runs, {KPLEX: "", "moved": "--driver-java-options -Xms1g"}, 3_000_000, 3)
    lines = text.splitlines()
    assert lines[0] == "3,000,000 records, exactly once, V = 9; 3 alternating rounds; medians, s"
    assert lines[3] == "| kplex's own | – | 9.00 | 1.00x | 3.00 | 13.00 | 1.00x | 8.00, 9.00, 10.00 |"
    assert lines[4] == "| moved | --driver-java-options -Xms1g | 6.00 | 0.67x | 4.00 | 13.00 | 1.00x | 6.00, 7.00, 5.00 |"


@pytest.mark.parametrize("text", ["no equals sign", "=--conf a=b", "name=", f"{KPLEX}=--conf a=b"])
def test_a_setting_without_a_name_or_arguments_is_refused(text):
    with pytest.raises(argparse.ArgumentTypeError):
        setting(text)


def test_a_settings_leading_assignments_are_its_environment_the_rest_its_arguments():
    name, text = setting("JDK 25=JAVA_HOME=/opt/jdk-25  KPLEX_CLASS_ARCHIVE=off --driver-java-options -Xms1g")
    assert name == "JDK 25"
    assert split_setting(text) == ({"JAVA_HOME": "/opt/jdk-25", "KPLEX_CLASS_ARCHIVE": "off"},
                                   "--driver-java-options -Xms1g")
    # An assignment after the first argument is the argument's, not the environment's.
    assert split_setting("--conf spark.x=y A=b") == ({}, "--conf spark.x=y A=b")
    assert split_setting("JAVA_HOME=/opt/jdk-25") == ({"JAVA_HOME": "/opt/jdk-25"}, "")


def test_the_untimed_first_run_of_an_aot_cache_setting_trains_the_cache():
    timed = "JAVA_HOME=/opt/jdk-25 --driver-java-options -XX:AOTCache=/tmp/k.aot"
    assert training(timed) == "JAVA_HOME=/opt/jdk-25 --driver-java-options -XX:AOTCacheOutput=/tmp/k.aot"
    assert training("--conf spark.x=y") == "--conf spark.x=y"
