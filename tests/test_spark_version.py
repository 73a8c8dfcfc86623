"""Which Spark runs the tests, and that kplex refuses a Spark it does not support with an
error that says which ones it does."""
from __future__ import annotations

import os

import pytest

from kplex import session
from kplex.errors import KplexError


def test_the_tests_run_on_the_spark_they_were_asked_to(spark):
    expected = os.environ.get("KPLEX_EXPECT_SPARK")
    if expected is None:
        pytest.skip("KPLEX_EXPECT_SPARK names the Spark of a run of scripts/test_spark_version.sh")
    assert spark.version == expected


@pytest.mark.parametrize("version", ["3.5.7", "4.4.0", "5.0.0"])
def test_an_unsupported_spark_is_refused_naming_the_supported_ones(version):
    with pytest.raises(KplexError, match=r"Spark 4\.0, 4\.1, 4\.2 and 4\.3 .*pyspark>=4\.0,<4\.4"):
        session.check_spark_version(version)


@pytest.mark.parametrize("version", ["4.0.0", "4.0.1", "4.1.1", "4.2.1", "4.3.0"])
def test_a_supported_spark_passes(version):
    session.check_spark_version(version)
